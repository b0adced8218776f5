"""Accounts like a product: staff create users (password validators, a one-time password when
none is given, audited); owners add members by username or e-mail address and are told, naming
the field, when no such user exists; nobody else learns whether a username exists."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from sampan.accounts.models import AuditEvent, Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(make_user: Any) -> Any:
    user = make_user("root")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


REFUSED = {"code": "forbidden",
           "message": "creating users needs a staff account, or the owner's role in the project "
                      "the user is added to (project_id)"}


def test_only_staff_create_users_and_a_non_staff_learns_nothing_of_the_input(
        make_user: Any, api: Any, staff: Any, project_with_roles: dict[str, Any]) -> None:
    ana = make_user("ana")
    editor, project = project_with_roles["editor"], project_with_roles["project"]
    for user, body in ((ana, {"username": "carol", "password": "a long sentence"}),
                       (ana, {"username": "ana"}), (ana, {}),
                       (ana, {"username": "carol", "project_id": str(project.pk)}),
                       (editor, {"username": "carol", "project_id": str(project.pk)}),
                       (editor, {"username": "carol", "project_id": "not-a-uuid"}),
                       (editor, {"username": "carol"})):
        refused = api(user).post("/api/v1/users/", body, format="json")
        assert refused.status_code == 403, (body, refused.content)
        assert refused.json()["error"] == REFUSED
    assert api().post("/api/v1/users/", {"username": "carol"}, format="json").status_code in (
        401, 403)
    assert not get_user_model().objects.filter(username="carol").exists()

    made = api(staff).post("/api/v1/users/", {"username": "carol", "email": "c@example.org",
                                              "password": "plum orchard 1987"}, format="json")

    assert made.status_code == 201
    assert made.json()["username"] == "carol" and made.json()["generated_password"] is None
    carol = get_user_model().objects.get(username="carol")
    assert carol.check_password("plum orchard 1987") and not carol.is_staff
    assert carol.email == "c@example.org"
    event = AuditEvent.objects.get(action="user.create")
    assert (event.actor_name, event.project, event.target_id) == ("root", None, str(carol.pk))
    assert event.details == {"username": "carol", "email": "c@example.org",
                             "password_generated": False}


def test_without_a_password_a_one_time_password_is_answered_once(
        api: Any, staff: Any) -> None:
    made = api(staff).post("/api/v1/users/", {"username": "dan"}, format="json").json()

    password = made["generated_password"]
    assert isinstance(password, str) and len(password) == 16
    client = APIClient()
    signed_in = client.post("/api/v1/auth/login/", {"username": "dan", "password": password},
                            format="json", HTTP_ORIGIN="http://testserver")
    assert signed_in.status_code == 200, signed_in.content
    assert password not in str(AuditEvent.objects.get(action="user.create").details)


@pytest.mark.parametrize("body, field, fragment", [
    ({"username": "erin", "password": "short"}, "password", "too short"),
    ({"username": "erin", "password": "password123"}, "password", "too common"),
    ({"username": "erin", "password": "83920174659"}, "password", "entirely numeric"),
    ({"username": "erin", "email": "erin@example.org", "password": "erin@example.org!"},
     "password", "too similar"),
    ({"username": "bad name!", "password": "plum orchard 1987"}, "username", "valid username"),
    ({"username": "erin", "email": "not-an-address", "password": "plum orchard 1987"},
     "email", "valid email"),
    ({"username": "", "password": "plum orchard 1987"}, "username", "blank"),
])
def test_bad_input_is_refused_naming_the_field(api: Any, staff: Any, body: dict[str, str],
                                                field: str, fragment: str) -> None:
    response = api(staff).post("/api/v1/users/", body, format="json")

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["field"] == field
    assert fragment in error["message"].lower()
    assert not AuditEvent.objects.filter(action="user.create").exists()


def test_a_taken_username_or_address_is_a_conflict(api: Any, staff: Any, make_user: Any) -> None:
    make_user("fay")
    get_user_model().objects.filter(username="fay").update(email="fay@example.org")

    name = api(staff).post("/api/v1/users/", {"username": "FAY"}, format="json")
    address = api(staff).post("/api/v1/users/", {"username": "fay2",
                                                 "email": "Fay@Example.org"}, format="json")

    assert (name.status_code, name.json()["error"]["field"]) == (409, "username")
    assert (address.status_code, address.json()["error"]["field"]) == (409, "email")


def test_me_says_whether_the_user_is_staff(api: Any, staff: Any, make_user: Any) -> None:
    assert api(staff).get("/api/v1/auth/me/").json()["is_staff"] is True
    assert api(make_user("gus")).get("/api/v1/auth/me/").json()["is_staff"] is False


def test_an_owner_invites_by_email_and_is_told_of_an_unknown_user(
        project_with_roles: dict[str, Any], api: Any, make_user: Any) -> None:
    project, owner = project_with_roles["project"], project_with_roles["owner"]
    make_user("hana")
    get_user_model().objects.filter(username="hana").update(email="hana@example.org")
    members = f"/api/v1/projects/{project.pk}/members/"

    added = api(owner).post(members, {"email": "HANA@example.org", "role": "viewer"},
                            format="json")
    no_name = api(owner).post(members, {"username": "nobody", "role": "viewer"}, format="json")
    no_address = api(owner).post(members, {"email": "x@example.org", "role": "viewer"},
                                 format="json")
    neither = api(owner).post(members, {"role": "viewer"}, format="json")
    both = api(owner).post(members, {"username": "hana", "email": "hana@example.org",
                                     "role": "viewer"}, format="json")

    assert (added.status_code, added.json()["username"]) == (200, "hana")
    assert Membership.objects.get(project=project, user__username="hana").role == "viewer"
    assert AuditEvent.objects.filter(project=project, action="member.set",
                                     details__username="hana").exists()
    for response, field in ((no_name, "username"), (no_address, "email"),
                            (neither, "username"), (both, "username")):
        assert response.status_code == 400, response.content
        assert response.json()["error"]["field"] == field
    assert "no user named 'nobody'" in no_name.json()["error"]["message"]


def test_an_address_two_users_share_asks_for_the_username(
        project_with_roles: dict[str, Any], api: Any, make_user: Any) -> None:
    make_user("ivy"), make_user("ivy2")
    get_user_model().objects.filter(username__startswith="ivy").update(email="ivy@example.org")

    response = api(project_with_roles["owner"]).post(
        f"/api/v1/projects/{project_with_roles['project'].pk}/members/",
        {"email": "ivy@example.org", "role": "viewer"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "email"
    assert "invite by username" in response.json()["error"]["message"]


@pytest.mark.parametrize("who", ["editor", "viewer", "outsider"])
def test_a_non_owner_gets_the_same_answer_whether_or_not_the_user_exists(
        project_with_roles: dict[str, Any], api: Any, make_user: Any, who: str) -> None:
    make_user("jo")
    get_user_model().objects.filter(username="jo").update(email="jo@example.org")
    members = f"/api/v1/projects/{project_with_roles['project'].pk}/members/"
    client = api(project_with_roles[who])

    answers = [client.post(members, body, format="json") for body in (
        {"username": "jo", "role": "viewer"}, {"username": "nobody", "role": "viewer"},
        {"email": "jo@example.org", "role": "viewer"}, {"email": "no@example.org",
                                                        "role": "viewer"},
        {"username": "jo", "role": "emperor"}, {})]

    assert {(a.status_code, a.content) for a in answers} == {
        (answers[0].status_code, answers[0].content)}
    assert answers[0].status_code == (404 if who == "outsider" else 403)
    assert not Membership.objects.filter(user__username="jo").exists()


def test_the_audit_log_filters_by_action(project_with_roles: dict[str, Any], api: Any) -> None:
    project, owner = project_with_roles["project"], project_with_roles["owner"]
    base = f"/api/v1/projects/{project.pk}/audit/"

    exact = api(owner).get(base, {"action": "project.create"}).json()
    kind = api(owner).get(base, {"action": "member."}).json()
    none = api(owner).get(base, {"action": "member"}).json()

    assert [e["action"] for e in exact["results"]] == ["project.create"]
    assert [e["action"] for e in kind["results"]] == ["member.set", "member.set"]
    assert none["count"] == 0


def test_a_password_is_kept_as_typed_spaces_included(api: Any, staff: Any) -> None:
    assert api(staff).post("/api/v1/users/", {"username": "kim",
                                              "password": " plum orchard 1987 "},
                           format="json").status_code == 201

    kim = get_user_model().objects.get(username="kim")
    assert kim.check_password(" plum orchard 1987 ")
    assert not kim.check_password("plum orchard 1987")


def test_an_owner_creates_a_user_into_their_project_in_one_step(
        project_with_roles: dict[str, Any], api: Any, staff: Any) -> None:
    owner, project = project_with_roles["owner"], project_with_roles["project"]
    made = api(owner).post("/api/v1/users/", {"username": "fay", "project_id": str(project.pk),
                                              "role": "viewer"}, format="json")
    assert made.status_code == 201, made.content
    assert len(made.json()["generated_password"]) == 16
    fay = get_user_model().objects.get(username="fay")
    assert Membership.objects.get(user=fay, project=project).role == "viewer"
    assert AuditEvent.objects.filter(action="member.set", project=project).exists()
    # a refused user is not half made: no account without its membership
    taken = api(owner).post("/api/v1/users/", {"username": "fay", "project_id": str(project.pk)},
                            format="json")
    assert taken.status_code == 409
    # staff may name any project; an unknown one is a 400 naming the field, and no user is made
    unknown = api(staff).post("/api/v1/users/", {"username": "gus", "project_id":
                                                 "00000000-0000-0000-0000-000000000000"},
                              format="json")
    assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "project_id"
    assert not get_user_model().objects.filter(username="gus").exists()
