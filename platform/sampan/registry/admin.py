from django.contrib import admin

from sampan.registry.models import ModelVersion, RegisteredModel

admin.site.register(RegisteredModel)
admin.site.register(ModelVersion)
