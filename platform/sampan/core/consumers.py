"""Websocket consumer that streams a job's progress to browsers (Channels)."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer


class JobProgressConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/jobs/<kind>/<uuid>/``: sends the current state on connect, then every event.

    ``kind`` is ``training``, ``import`` or ``compression``. Only members of the job's project
    may connect.
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        kind = self.scope["url_route"]["kwargs"]["kind"]
        job_id = self.scope["url_route"]["kwargs"]["job_id"]
        snapshot = await self._snapshot(user, kind, job_id)
        if snapshot is None:
            await self.close(code=4404)
            return
        self.group = snapshot.pop("_group")
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"status": snapshot["status"], "progress": snapshot["progress"],
                              "error": snapshot["error"]})

    async def disconnect(self, code: int) -> None:
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def job_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])

    @database_sync_to_async
    def _snapshot(self, user: Any, kind: str, job_id: str) -> dict[str, Any] | None:
        from sampan.accounts.selectors import project_ids_for_user
        from sampan.core.services import job_group_name
        from sampan.compression.models import CompressionJob
        from sampan.datasets.models import ImportJob
        from sampan.training.models import TrainingJob

        if user is None or not user.is_authenticated:
            return None
        model = {"training": TrainingJob, "import": ImportJob,
                 "compression": CompressionJob}.get(kind)
        if model is None:
            return None
        job = model.objects.filter(pk=job_id, project_id__in=project_ids_for_user(user)).first()
        if job is None:
            return None
        return {"status": job.status, "progress": job.progress, "error": job.error,
                "_group": job_group_name(model, job.pk)}
