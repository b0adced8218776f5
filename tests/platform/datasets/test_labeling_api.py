"""What fast labeling needs from the API: boxes in the sample list at a bounded cost (the gallery
draws them on the thumbnails), and a bulk label that can be undone (bulk clear)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sampan.datasets.models import Annotation, AnnotationKind, Sample, Suggestion
from sampan.datasets.services import dataset_create, sample_label_set

pytestmark = pytest.mark.django_db


def _street(project: Any, n: int) -> Any:
    from sampan.registry.models import ModelVersion, RegisteredModel

    dataset = dataset_create(project=project, name=f"street-{n}", task_type="object_detection",
                             labels=["car", "person"])
    car, person = dataset.class_labels.all()
    model = RegisteredModel.objects.create(project=project, name=f"street-{n}",
                                           task_type="object_detection")
    version = ModelVersion.objects.create(
        project=project, model=model, version=1, task_type="object_detection",
        labels=["car", "person"], manifest={}, package_dir="models/x", model_sha256="0" * 64,
        model_size=1)
    for i in range(n):
        sample = Sample.objects.create(dataset=dataset,
                                       content_sha256=f"{n:04d}{i:06d}".ljust(64, "f"),
                                       file=f"samples/{n}-{i}.png", original_name=f"{i}.png",
                                       width=320, height=240)
        Annotation.objects.bulk_create([
            Annotation(sample=sample, kind=AnnotationKind.BOX, class_label=car,
                       x1=1, y1=2, x2=30 + i % 7, y2=40),
            Annotation(sample=sample, kind=AnnotationKind.BOX, class_label=person,
                       x1=100, y1=20, x2=150, y2=200)])
        Suggestion.objects.create(sample=sample, model_version=version, kind=AnnotationKind.BOX,
                                  class_label=person, score=0.5, x1=200, y1=20, x2=250, y2=90)
    return dataset


def test_a_page_of_samples_with_boxes_costs_the_same_queries_for_10_or_100(
        project_with_roles: dict[str, Any], api: Any) -> None:
    project = project_with_roles["project"]
    client = api(project_with_roles["viewer"])
    counts = {}
    for n in (10, 100):
        dataset = _street(project, n)
        url = f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/samples/?page_size=100"
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200
        rows = response.json()["results"]
        assert len(rows) == n
        # every sample comes with its boxes (class name, id and corners) and its etag
        assert [(a["class_label"], a["x1"], a["y2"]) for a in rows[3]["annotations"]] == [
            ("car", 1.0, 40.0), ("person", 100.0, 200.0)]
        assert all(len(row["etag"]) == 32 for row in rows)
        # and a model's suggestions, apart (the thumbnails draw them dashed)
        assert [(b["class_label"], b["x1"], b["score"]) for b in rows[3]["suggestions"]] == [
            ("person", 200.0, 0.5)]
        counts[n] = len(queries)
    # membership, dataset, count, the page of samples, their annotations with classes, their
    # suggestions with classes: no query per sample
    assert counts[10] == counts[100] and counts[100] <= 6, counts


def test_bulk_label_with_null_clears_the_labels(project_with_roles: dict[str, Any],
                                                api: Any) -> None:
    project = project_with_roles["project"]
    dataset = dataset_create(project=project, name="pets", labels=["cat", "dog"])
    samples = []
    for i, label in enumerate(["cat", "dog", None]):
        sample = Sample.objects.create(dataset=dataset, content_sha256=str(i).ljust(64, "0"),
                                       file=f"samples/{i}.png", original_name=f"{i}.png",
                                       width=8, height=8)
        if label:
            sample_label_set(sample=sample, label=label)
        samples.append(sample)
    client = api(project_with_roles["editor"])
    base = f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/"
    response = client.post(base + "labels/bulk/", {"sample_ids": [str(s.pk) for s in samples[:2]],
                                                   "class_label_id": None}, format="json")
    assert response.status_code == 200 and response.json() == {"labeled": 2}
    assert client.get(base + "samples/?unlabeled=true").json()["count"] == 3
    assert list(dataset.class_labels.values_list("name", flat=True)) == ["cat", "dog"]
