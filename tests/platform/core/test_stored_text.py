"""A job's error is stored in English (written by a worker, the reaper or a cancel, outside any
request) and read in the request's language (sampan.core.stored_text)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import translation

from sampan.core import stored_text
from sampan.core.stored_text import (CANCELLED_BY_USER, TRAINING_FAILED, TRAINING_TIME_LIMIT,
                                     WORKER_LOST, stored_text_in_language)
from sampan.training import services
from tests.platform.training.test_training_services import labelled_version


@pytest.mark.parametrize("template", stored_text.TEMPLATES)
def test_every_template_reads_back_in_chinese_with_its_values(template: str) -> None:
    values = {"seconds": 120.0, "reason": "val: no image could be decoded (3 of 3: corrupt png)",
              "limit": 420.0, "budget": 200.0}
    english = template % values
    assert stored_text_in_language(english) == english  # no language asked: as stored
    with translation.override("zh-hans"):
        chinese = stored_text_in_language(english)
    assert chinese != english and "%(" not in chinese, chinese
    for name, value in values.items():
        if f"%({name})" in template:
            assert (f"{value:.0f}" if name in ("seconds", "limit") else f"{value:g}"
                    if name == "budget" else value) in chinese, (name, chinese)


def test_known_sentences_and_anything_else() -> None:
    read = stored_text_in_language
    with translation.override("zh-hans"):
        assert read(CANCELLED_BY_USER) == "已由用户取消"
        assert read(WORKER_LOST % {"seconds": 90}) == "工作进程失联：90 秒没有心跳"
        assert read(TRAINING_FAILED % {"reason": "a: b: c"}) == "训练失败：a: b: c"
        assert read(TRAINING_TIME_LIMIT % {"limit": 420, "budget": 200.5}).startswith(
            "超出时间上限：开始 420 秒后仍在训练（预算 200.5 秒")
        assert read("cancelled by user!") == "cancelled by user!"
        assert read("") == ""


@pytest.mark.django_db
def test_a_cancelled_job_reads_in_the_language_asked_for(project_with_roles: dict[str, Any],
                                                         api: Any) -> None:
    project = project_with_roles["project"]
    job = services.training_job_create(
        project=project, dataset_version=labelled_version(project, {"a": 5, "b": 5}), budget_s=30)
    services.training_job_cancel(job=job)
    job.refresh_from_db()
    assert job.error == "cancelled by user"  # stored as written
    url = f"/api/v1/projects/{project.pk}/training-jobs/{job.pk}/"
    owner = api(project_with_roles["owner"])
    assert owner.get(url).json()["error"] == "cancelled by user"
    assert owner.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN").json()["error"] == "已由用户取消"
