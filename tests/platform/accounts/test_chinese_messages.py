"""Accounts' errors in the client's language (Accept-Language zh-CN: Simplified Chinese; English
by default), phrases handed over by other apps included (what an archived project refuses)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN"}


def test_a_wrong_password_is_said_in_chinese_when_asked(make_user: Any, api: Any) -> None:
    make_user("ana")
    body = {"username": "ana", "password": "wrong"}

    english = api().post("/api/v1/auth/login/", body, format="json")
    assert english.status_code == 401
    assert english.json()["error"]["message"] == "wrong username or password"

    chinese = api().post("/api/v1/auth/login/", body, format="json", **ZH)
    assert chinese.status_code == 401
    assert chinese.json()["error"] == {"code": "authentication_failed",
                                       "message": "用户名或密码错误"}


def test_an_archived_project_refuses_in_chinese_naming_what_it_refuses(
        project_with_roles: dict[str, Any], api: Any) -> None:
    owner, project = api(project_with_roles["owner"]), project_with_roles["project"]
    url = f"/api/v1/projects/{project.pk}/"
    assert owner.patch(url, {"archived": True}, format="json").status_code == 200

    english = owner.post(f"{url}datasets/", {"name": "d"}, format="json")
    assert english.status_code == 409
    assert english.json()["error"]["message"] == (
        "project 'Project A' is archived: creating a dataset is refused; unarchive it first "
        "(PATCH archived=false)")

    chinese = owner.post(f"{url}datasets/", {"name": "d"}, format="json", **ZH)
    assert chinese.status_code == 409
    assert chinese.json()["error"]["code"] == "archived"
    assert chinese.json()["error"]["message"] == (
        "项目 'Project A' 已归档，无法创建数据集：请先取消归档（PATCH archived=false）")

    viewer = api(project_with_roles["viewer"]).patch(url, {"archived": False}, format="json",
                                                     **ZH)
    assert viewer.status_code == 403
    assert viewer.json()["error"]["message"] == "此操作需要项目中的 owner 角色；你的角色是 viewer"


def test_a_short_password_is_refused_in_chinese(project_with_roles: dict[str, Any]) -> None:
    """Django 5.2's MinimumLengthValidator message has no entry in Django's own zh_Hans
    catalogue (its msgid changed); Sampan's catalogue supplies it (found by a reviewer)."""
    from rest_framework.test import APIClient

    owner = APIClient()
    owner.force_authenticate(project_with_roles["owner"])
    answer = owner.post("/api/v1/users/", {"username": "zz", "password": "Zq9!x",
                                           "project_id": str(project_with_roles["project"].pk)},
                        format="json", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert answer.status_code == 400
    assert "密码长度太短。密码必须包含至少 8 个字符。" in answer.json()["error"]["message"]
