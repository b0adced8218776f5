from django.contrib import admin

from sampan.compression.models import CompressionJob

admin.site.register(CompressionJob)
