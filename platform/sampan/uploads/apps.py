from django.apps import AppConfig


class UploadsConfig(AppConfig):
    name = "sampan.uploads"
    label = "uploads"
