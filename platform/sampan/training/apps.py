from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "sampan.training"
    label = "training"
