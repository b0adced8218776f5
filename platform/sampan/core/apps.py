from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "sampan.core"
    label = "core"
