"""The sample list's filters: class label, unlabeled, and the split of a dataset version."""

from __future__ import annotations

from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.fixtures.images import png_bytes


def _names(response: Any) -> list[str]:
    return sorted(row["original_name"] for row in response.json()["results"])


def _pets(project: Any) -> tuple[Any, Any]:
    """Two cats, two dogs and one unlabeled image; version 1 puts one of each class in val."""
    from sampan.datasets import imports, services
    from sampan.datasets.versions import dataset_version_create

    dataset = services.dataset_create(project=project, name="Pets")
    for label, colors in {"cat": [(250, 0, 0), (240, 0, 0)], "dog": [(0, 0, 250), (0, 0, 240)],
                          "": [(0, 250, 0)]}.items():
        files = [SimpleUploadedFile(f"{label or 'unknown'}-{i}.png", png_bytes(color=c))
                 for i, c in enumerate(colors)]
        job = imports.import_job_create(dataset=dataset, files=files, label=label)
        imports.import_job_run(job_id=job.pk)
    return dataset, dataset_version_create(dataset=dataset, seed=0, val_fraction=0.5)


def test_sample_list_filters(project_with_roles: dict[str, Any], api: Any) -> None:
    project = project_with_roles["project"]
    dataset, version = _pets(project)
    url = f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/samples/"
    client = api(project_with_roles["viewer"])

    everything = client.get(url)
    cats = client.get(url, {"label": "cat"})
    unlabeled = client.get(url, {"unlabeled": "true"})
    val = client.get(url, {"version": str(version.pk), "split": "val"})
    train = client.get(url, {"version": str(version.pk), "split": "train"})

    assert everything.json()["count"] == 5
    assert _names(cats) == ["cat-0.png", "cat-1.png"]
    assert _names(unlabeled) == ["unknown-0.png"]
    assert len(_names(val)) == len(_names(train)) == 2
    assert {n.split("-")[0] for n in _names(val)} == {"cat", "dog"}
    assert set(_names(val)) | set(_names(train)) == {"cat-0.png", "cat-1.png", "dog-0.png",
                                                     "dog-1.png"}


def test_sample_list_rejects_a_malformed_filter_naming_it(project_with_roles: dict[str, Any],
                                                         api: Any) -> None:
    from sampan.datasets.services import dataset_create

    project = project_with_roles["project"]
    dataset = dataset_create(project=project, name="Pets")
    url = f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/samples/"
    client = api(project_with_roles["viewer"])

    bad_version = client.get(url, {"version": "v1"})
    bad_split = client.get(url, {"version": "6f1c6a52-2d6c-4b47-9a39-1b1a44f7c2a1",
                                 "split": "holdout"})

    assert bad_version.status_code == 400
    assert bad_version.json()["error"]["field"] == "version"
    assert bad_split.status_code == 400
    assert bad_split.json()["error"]["field"] == "split"


def test_sample_image_is_cached_by_the_browser(project_with_roles: dict[str, Any],
                                               api: Any) -> None:
    project = project_with_roles["project"]
    dataset, _ = _pets(project)
    client = api(project_with_roles["viewer"])
    sample = client.get(f"/api/v1/projects/{project.pk}/datasets/{dataset.pk}/samples/"
                        ).json()["results"][0]
    response = client.get(f"/api/v1/projects/{project.pk}/samples/{sample['id']}/image/")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["Cache-Control"] == "private, max-age=31536000, immutable"
    assert response["ETag"] == f'"{sample["content_sha256"]}"'
    outsider = api(project_with_roles["outsider"]).get(
        f"/api/v1/projects/{project.pk}/samples/{sample['id']}/image/")
    assert outsider.status_code == 404 and "Cache-Control" not in outsider
