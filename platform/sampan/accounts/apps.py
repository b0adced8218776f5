from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "sampan.accounts"
    label = "accounts"

    def ready(self) -> None:
        from sampan.accounts import schema  # noqa: F401  (registers the OpenAPI extension)
