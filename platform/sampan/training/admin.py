from django.contrib import admin

from sampan.training.models import EvaluationReport, TrainingJob

admin.site.register(TrainingJob)
admin.site.register(EvaluationReport)
