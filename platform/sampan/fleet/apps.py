from typing import Any

from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "sampan.fleet"
    label = "fleet"

    def ready(self) -> None:
        from django.db import transaction
        from django.db.models.signals import post_delete, post_save

        from sampan.fleet.fastpath import fleet_changed
        from sampan.fleet.models import Deployment, Device, DeviceBenchmark
        from sampan.registry.models import SigningKey

        def changed(sender: Any, **kwargs: Any) -> None:
            # credentials, desired states, open benchmarks or trusted keys may differ now: the
            # heartbeat fast path reads them again (after the commit, so it reads the new ones)
            transaction.on_commit(fleet_changed)

        for model in (Device, Deployment, DeviceBenchmark, SigningKey):
            # weak=False: ``changed`` is local to this method (a weak reference would die with it)
            post_save.connect(changed, sender=model, weak=False,
                              dispatch_uid=f"fastpath-{model.__name__}")
            post_delete.connect(changed, sender=model, weak=False,
                                dispatch_uid=f"fastpath-d-{model.__name__}")
