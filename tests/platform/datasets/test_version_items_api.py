"""A dataset version's items by sample id: the frozen boxes an evaluation report's error browser
draws as the truth (GET .../dataset-versions/<id>/items/?sample_id=...)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.fixtures.images import png_bytes


def _street(project: Any) -> tuple[Any, Any, list[Any]]:
    """Three 40x30 images with boxes (car, person), frozen into version 1; then the first
    image's boxes are edited, which the version must not show."""
    from sampan.datasets import imports, services
    from sampan.datasets.models import TaskType
    from sampan.datasets.versions import dataset_version_create

    dataset = services.dataset_create(project=project, name="Street",
                                      task_type=TaskType.OBJECT_DETECTION,
                                      labels=["car", "person"])
    files = [SimpleUploadedFile(f"street-{i}.png", png_bytes(color=(10 * i, 0, 0), size=(40, 30)))
             for i in range(3)]
    imports.import_job_run(job_id=imports.import_job_create(dataset=dataset, files=files).pk)
    samples = list(dataset.samples.order_by("original_name"))
    for i, sample in enumerate(samples):
        services.sample_boxes_set(sample=sample, boxes=[
            {"x1": 1 + i, "y1": 2, "x2": 20.5, "y2": 25, "class_label": "car"},
            {"x1": 30, "y1": 0, "x2": 40, "y2": 30, "class_label": "person"}])
    version = dataset_version_create(dataset=dataset, seed=0, val_fraction=0.34,
                                     test_fraction=0)
    services.sample_boxes_set(sample=samples[0], boxes=[
        {"x1": 0, "y1": 0, "x2": 5, "y2": 5, "class_label": "person"}])
    return dataset, version, samples


def test_items_are_the_frozen_boxes_in_the_order_asked(project_with_roles: dict[str, Any],
                                                       api: Any) -> None:
    project = project_with_roles["project"]
    _, version, samples = _street(project)
    url = f"/api/v1/projects/{project.pk}/dataset-versions/{version.pk}/items/"
    stranger = uuid.uuid4()

    response = api(project_with_roles["viewer"]).get(
        url, {"sample_id": [str(samples[2].pk), str(stranger), str(samples[0].pk)]})

    assert response.status_code == 200
    items = response.json()
    assert [i["sample_id"] for i in items] == [str(samples[2].pk), str(samples[0].pk)]
    first = items[1]
    # as frozen (class indices into the version's labels), not the edit made afterwards
    assert first["boxes"] == [[1.0, 2.0, 20.5, 25.0, 0.0], [30.0, 0.0, 40.0, 30.0, 1.0]]
    assert (first["width"], first["height"], first["class_index"]) == (40, 30, None)
    assert {i["split"] for i in items} <= {"train", "val"}
    assert version.labels == ["car", "person"]


def test_items_are_bounded_and_need_an_id(project_with_roles: dict[str, Any], api: Any) -> None:
    project = project_with_roles["project"]
    _, version, _ = _street(project)
    url = f"/api/v1/projects/{project.pk}/dataset-versions/{version.pk}/items/"
    client = api(project_with_roles["viewer"])

    too_many = client.get(url, {"sample_id": [str(uuid.uuid4()) for _ in range(101)]})
    none = client.get(url)
    malformed = client.get(url, {"sample_id": "s1"})
    hundred = client.get(url, {"sample_id": [str(uuid.uuid4()) for _ in range(100)]})

    for response in (too_many, none, malformed):
        assert response.status_code == 400, response.content
        assert response.json()["error"]["field"].startswith("sample_id")
    assert hundred.status_code == 200 and hundred.json() == []


def test_items_of_another_project_are_not_found(project_with_roles: dict[str, Any],
                                                 api: Any) -> None:
    project = project_with_roles["project"]
    _, version, samples = _street(project)
    url = f"/api/v1/projects/{project.pk}/dataset-versions/{version.pk}/items/"
    other_project = project_with_roles["other"].pk
    other = f"/api/v1/projects/{other_project}/dataset-versions/{version.pk}/items/"

    outsider = api(project_with_roles["outsider"])
    assert outsider.get(url, {"sample_id": str(samples[0].pk)}).status_code in (403, 404)
    assert outsider.get(other, {"sample_id": str(samples[0].pk)}).status_code == 404
