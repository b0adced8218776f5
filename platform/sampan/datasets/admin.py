from django.contrib import admin

from sampan.datasets.models import Dataset, DatasetVersion, ImportJob, PrelabelJob, Sample

admin.site.register(Dataset)
admin.site.register(Sample)
admin.site.register(ImportJob)
admin.site.register(PrelabelJob)
admin.site.register(DatasetVersion)
