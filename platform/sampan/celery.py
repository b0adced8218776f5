"""The Celery application. The web process only uses it to send tasks by name.

Worker processes start it with ``celery -A workers.app worker``, which also registers the tasks of
``workers`` (torch); the platform's own light tasks are discovered from ``sampan.<app>.tasks``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sampan.settings")

app = Celery("sampan")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["sampan.core", "sampan.datasets", "sampan.fleet", "sampan.training",
                        "sampan.uploads"])
