from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "sampan.fleet"
    label = "fleet"
