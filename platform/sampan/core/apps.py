from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "sampan.core"
    label = "core"

    def ready(self) -> None:
        # the OpenAPI extensions of the name and text fields register themselves on import
        from sampan.core import schema  # noqa: F401
