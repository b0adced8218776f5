from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    name = "sampan.datasets"
    label = "datasets"
