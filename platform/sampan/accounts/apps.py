from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "sampan.accounts"
    label = "accounts"
