from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "sampan.compression"
    label = "compression"
