from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "sampan.registry"
    label = "registry"
