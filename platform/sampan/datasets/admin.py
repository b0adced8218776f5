from django.contrib import admin

from sampan.datasets.models import Dataset, DatasetVersion, ImportJob, Sample

admin.site.register(Dataset)
admin.site.register(Sample)
admin.site.register(ImportJob)
admin.site.register(DatasetVersion)
