"""Input and output serializers of the datasets API (no side effects)."""

from __future__ import annotations

import codecs

import math
from typing import Any

from django.utils.translation import gettext as _
from rest_framework import serializers

from sampan.core.stored_text import StoredTextField
from sampan.core.validation import NameField, TextField
from sampan.datasets.etags import annotations_etag
from sampan.datasets.models import Split, TaskType
from sampan.datasets.report_texts import ImportReportField, PrelabelReportField, VersionFlagsField
from sampan.datasets.selectors import SAMPLE_ORDERINGS, dataset_version_pixels
from sampan.datasets.versions import DEFAULT_TEST_FRACTION, DEFAULT_VAL_FRACTION
from sampan.training.budget import minimum_budget_s


class ClassLabelOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    position = serializers.IntegerField(help_text="Index order of the class in trained models.")
    hotkey = serializers.CharField(
        help_text="The labeling key chosen for the class (0-9 or a-z), or \"\" for the "
                  "automatic one: a class named by one digit or letter gets that key, the others "
                  "the free keys in class order (1-9, 0, then a-z without N and P).")


class DatasetOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    task_type = serializers.ChoiceField(choices=TaskType.choices)
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    archived = serializers.BooleanField(
        help_text="Archived: hidden from the default list, refuses new work (409 archived).")
    archived_at = serializers.DateTimeField(allow_null=True)
    sample_count = serializers.IntegerField(required=False)
    suggested_samples = serializers.IntegerField(
        required=False, help_text="Samples holding a model's suggestions (pre-labeling).")
    class_labels = ClassLabelOutput(many=True, source="class_labels.all")


class DatasetInput(serializers.Serializer):
    name = NameField(max_length=200)
    task_type = serializers.ChoiceField(choices=TaskType.choices,
                                        default=TaskType.IMAGE_CLASSIFICATION)
    description = TextField(required=False, allow_blank=True, default="")
    labels = serializers.ListField(child=NameField(max_length=200), required=False,
                                   default=list)


class DatasetUpdateInput(serializers.Serializer):
    name = NameField(max_length=200, required=False)
    description = TextField(required=False, allow_blank=True)
    archived = serializers.BooleanField(required=False, help_text="true: archive; false: "
                                        "unarchive.")


class ClassLabelInput(serializers.Serializer):
    names = serializers.ListField(child=NameField(max_length=200), min_length=1)


class HotkeyInput(serializers.Serializer):
    class_label_id = serializers.UUIDField()
    hotkey = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=16,
                                   help_text="One of 0-9, a-z (case does not matter; N and P "
                                             "are the panels' own keys), or \"\" for automatic.")


class HotkeysInput(serializers.Serializer):
    hotkeys = HotkeyInput(many=True)


class AnnotationOutput(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField()
    class_label = serializers.CharField(source="class_label.name")
    class_label_id = serializers.UUIDField()
    x1 = serializers.FloatField(allow_null=True)
    y1 = serializers.FloatField(allow_null=True)
    x2 = serializers.FloatField(allow_null=True)
    y2 = serializers.FloatField(allow_null=True)


class SuggestionOutput(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.CharField(help_text="class (an image-level class) | box")
    class_label = serializers.CharField(source="class_label.name")
    class_label_id = serializers.UUIDField()
    score = serializers.FloatField(
        help_text="class: the model's probability of the class; box: the detection score (0..1)")
    x1 = serializers.FloatField(allow_null=True)
    y1 = serializers.FloatField(allow_null=True)
    x2 = serializers.FloatField(allow_null=True)
    y2 = serializers.FloatField(allow_null=True)
    model_version_id = serializers.UUIDField()


#: a sample's text in a list is cut to this many characters (a 1 MB text is stored whole)
SHOWN_TEXT_CHARS = 10_000


class SampleOutput(serializers.Serializer):
    id = serializers.UUIDField()
    dataset_id = serializers.UUIDField()
    original_name = serializers.CharField()
    width = serializers.IntegerField(help_text="px, upright image")
    height = serializers.IntegerField(help_text="px, upright image")
    content_sha256 = serializers.CharField()
    source = serializers.CharField()
    created_at = serializers.DateTimeField()
    image_url = serializers.SerializerMethodField()
    text = serializers.SerializerMethodField(
        help_text=f"Text classification: the text (NFC), its first {SHOWN_TEXT_CHARS} "
                  "characters; empty for an image.")
    text_length = serializers.SerializerMethodField(
        help_text="Text classification: the whole text's length in characters (0 for an "
                  "image); longer than text's when text was cut.")
    annotations = AnnotationOutput(many=True, source="annotations.all")
    no_objects = serializers.BooleanField(
        help_text="Object detection: checked, the image holds nothing to box (a background "
                  "image; in versions with no boxes). Set with PUT boxes/ {boxes: [], "
                  "no_objects: true}; any box written clears it.")
    suggestions = SuggestionOutput(
        many=True, source="suggestions.all",
        help_text="A model's suggestions (pre-labeling), best first: never labels until "
                  "accepted (POST suggestions/accept/).")
    uncertainty = serializers.FloatField(
        allow_null=True,
        help_text="How unsure the last model that pre-labeled the sample was (0..1; "
                  "docs/contracts.md, \"Assisted labeling\"); null when none did.")
    etag = serializers.SerializerMethodField(
        help_text="Entity tag of the sample's annotations (unquoted); it changes with every "
                  "write of them. Send it as If-Match: \"<etag>\" with a label or boxes write, "
                  "and a write made meanwhile by someone else is refused with 412.")

    def get_image_url(self, sample: Any) -> str | None:
        if not sample.file:  # a text
            return None
        return f"/api/v1/projects/{sample.dataset.project_id}/samples/{sample.pk}/image/"

    def get_text(self, sample: Any) -> str:
        return str(sample.text[:SHOWN_TEXT_CHARS])

    def get_text_length(self, sample: Any) -> int:
        return len(sample.text)

    def get_etag(self, sample: Any) -> str:
        # from the prefetched annotations: no query per sample in a page of the list
        return annotations_etag(sample.pk, sample.annotations.all(), sample.no_objects)


class SampleListQuery(serializers.Serializer):
    label = serializers.CharField(required=False, help_text="Only samples with this class label.")
    search = serializers.CharField(
        required=False, allow_blank=True, max_length=200,
        help_text="Only samples whose text (text datasets) or original file name holds this, "
                  "case-insensitive.")
    unlabeled = serializers.BooleanField(
        required=False, default=False,
        help_text="Only samples without annotations (and not checked \"no objects\").")
    no_objects = serializers.BooleanField(
        required=False, default=False,
        help_text="Only samples checked \"no objects\" (background images).")
    version = serializers.UUIDField(required=False,
                                    help_text="A dataset version whose split to filter on.")
    split = serializers.ChoiceField(choices=Split.choices, required=False,
                                    help_text="With version: only samples in this split.")
    ordering = serializers.ChoiceField(
        choices=list(SAMPLE_ORDERINGS), required=False, default="created_at",
        help_text="created_at: oldest first; -uncertainty: most uncertain first (as the last "
                  "pre-labeling model saw them; samples no model looked at come last).")


class LabelInput(serializers.Serializer):
    """Exactly one of ``class_label`` (a name; a new name creates the class) and
    ``class_label_id``; ``{"class_label": null}`` removes the sample's label."""

    class_label = NameField(required=False, allow_null=True, max_length=200,
                          help_text="Class name; a new name creates the class. "
                                                  "null removes the label.")
    class_label_id = serializers.UUIDField(required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "class_label" not in attrs and "class_label_id" not in attrs:
            raise serializers.ValidationError(
                {"class_label": _("give class_label (a name), class_label_id, or "
                                  "class_label: null to remove the label")})
        if attrs.get("class_label") is not None and attrs.get("class_label_id") is not None:
            raise serializers.ValidationError(
                {"class_label": _("give class_label or class_label_id, not both")})
        return attrs


class BulkLabelInput(LabelInput):
    sample_ids = serializers.ListField(child=serializers.UUIDField(), min_length=1,
                                       max_length=10_000)


class BoxInput(serializers.Serializer):
    x1 = serializers.FloatField()
    y1 = serializers.FloatField()
    x2 = serializers.FloatField()
    y2 = serializers.FloatField()
    class_label = NameField(required=False, max_length=200)
    class_label_id = serializers.UUIDField(required=False)


class BoxesInput(serializers.Serializer):
    boxes = BoxInput(many=True)
    resolved_suggestion_ids = serializers.ListField(
        child=serializers.UUIDField(), required=False, default=list, max_length=10_000,
        help_text="The sample's suggestions this list took in or that were rejected: deleted "
                  "with the write (ids of suggestions already gone change nothing).")
    no_objects = serializers.BooleanField(
        required=False, default=False,
        help_text="true (with boxes: []): checked, the image holds nothing to box (a background "
                  "image). Every write sets the mark to this value, so a write with boxes clears "
                  "it.")


class SuggestionsInput(serializers.Serializer):
    suggestion_ids = serializers.ListField(
        child=serializers.UUIDField(), required=False, default=list, max_length=10_000,
        help_text="Suggestions of this sample; none or empty: all of them.")


class PrelabelJobInput(serializers.Serializer):
    model_version_id = serializers.UUIDField(
        help_text="A model version of this project for the dataset's task, with at least one "
                  "label that is a class of the dataset (by name).")
    score_threshold = serializers.FloatField(
        required=False, allow_null=True, default=None,
        help_text="Object detection: suggest boxes scoring above it (default: the manifest's "
                  "detection.score_threshold).")


class PrelabelJobOutput(serializers.Serializer):
    id = serializers.UUIDField()
    dataset_id = serializers.UUIDField()
    model_version_id = serializers.UUIDField()
    model_version_label = serializers.CharField(source="model_version.label",
                                                help_text="<model name> v<version>")
    score_threshold = serializers.FloatField(allow_null=True)
    status = serializers.CharField()
    progress = serializers.JSONField(help_text="fraction, done, total, suggestions, message")
    report = PrelabelReportField(
        help_text="model_version, samples, counts {done, suggestions, suggested_samples, "
                  "labeled_meanwhile, failed}, failed [{name, reason}], other_classes, "
                  "score_threshold, uncertainty (the rule)")
    error = StoredTextField(help_text="Why the job failed or was cancelled, in the "
                                      "request's language where the platform wrote it.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class TextOptionsInput(serializers.Serializer):
    """How a text classification dataset reads CSV / TSV tables and XLSX workbooks (ignored for
    images)."""

    text_column = serializers.CharField(
        required=False, allow_blank=True, max_length=200,
        help_text="Text datasets: the column of the texts, a 1-based number or a header name; "
                  "empty: a header column named text/content/review/文本/内容..., else the "
                  "column with the most distinct values.")
    label_column = serializers.CharField(
        required=False, allow_blank=True, max_length=200,
        help_text="Text datasets: the column of the labels (number or header name); 0: no "
                  "labels; empty: a header column named label/class/category/标签/类别..., "
                  "else the other column.")
    encoding = serializers.CharField(
        required=False, allow_blank=True, max_length=40,
        help_text="Text datasets: the files' encoding (utf-8, gb18030, utf-16, big5...); empty: "
                  "detected (byte-order mark, else UTF-8, else GB18030) and reported.")
    sheet = serializers.CharField(
        required=False, allow_blank=True, max_length=200,
        help_text="Text datasets: the worksheet of XLSX workbooks to read, by name; empty: the "
                  "first worksheet. A workbook without it is rejected naming its sheets.")

    def validate_encoding(self, value: str) -> str:
        if value:
            try:
                codecs.lookup(value)
            except LookupError:
                raise serializers.ValidationError(
                    _("unknown encoding %(encoding)r") % {"encoding": value}) from None
        return value

    def text_options(self) -> dict[str, str]:
        return {key: self.validated_data[key]
                for key in ("text_column", "label_column", "encoding", "sheet")
                if self.validated_data.get(key)}


class ImportInput(TextOptionsInput):
    # an empty file is rejected by name in the import report (as inside a zip), not a 400 for all
    files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), min_length=1)
    label = NameField(required=False, allow_blank=True, default="",
                      help_text="Class label for loose image files (not zips); not taken "
                                "by an object detection dataset.")


class ImportFromUploadInput(TextOptionsInput):
    upload_id = serializers.UUIDField(
        help_text="A complete resumable upload of yours (tus, POST /api/v1/uploads/): a zip in "
                  "ImageNet-folder layout (COCO, Pascal VOC or YOLO for an object detection "
                  "dataset) or one image. Its file moves to the import.")
    label = serializers.CharField(required=False, allow_blank=True, default="",
                                  help_text="Class label when the upload is one image file.")


class ImportJobOutput(serializers.Serializer):
    id = serializers.UUIDField()
    dataset_id = serializers.UUIDField()
    status = serializers.CharField()
    progress = serializers.JSONField()
    report = ImportReportField()
    error = StoredTextField(help_text="Why the job failed or was cancelled, in the "
                                      "request's language where the platform wrote it.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class DatasetVersionInput(serializers.Serializer):
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**31 - 1)
    val_fraction = serializers.FloatField(
        default=DEFAULT_VAL_FRACTION, min_value=0.0, max_value=0.9,
        help_text="Validation share per class. val_fraction + test_fraction must be below 1 "
                  "(400 naming val_fraction otherwise): something must be left to train on.")
    test_fraction = serializers.FloatField(
        default=DEFAULT_TEST_FRACTION, min_value=0.0, max_value=0.9,
        help_text="Held-out share per class; a class with fewer than 10 samples stays in "
                  "train/val (flagged).")
    note = TextField(required=False, allow_blank=True, default="")


class DatasetVersionOutput(serializers.Serializer):
    id = serializers.UUIDField()
    dataset_id = serializers.UUIDField()
    number = serializers.IntegerField()
    task_type = serializers.CharField()
    labels = serializers.ListField(child=serializers.CharField())
    seed = serializers.IntegerField()
    split_fractions = serializers.JSONField()
    digest = serializers.CharField()
    flags = VersionFlagsField()
    stats = serializers.JSONField()
    note = serializers.CharField()
    created_at = serializers.DateTimeField()
    min_budget_s = serializers.SerializerMethodField(
        help_text="Shortest training budget accepted for this version, whole seconds "
                  "(15, or 60 for object detection, + 0.01 per image + 1.5e-8 per pixel, "
                  "rounded up).")

    def get_min_budget_s(self, version: Any) -> float:
        n_images = int((version.stats or {}).get("samples", 0))
        return float(math.ceil(minimum_budget_s(n_images, dataset_version_pixels(version),
                                                 version.task_type)))


class DatasetVersionExportQuery(serializers.Serializer):
    format = serializers.ChoiceField(
        choices=["coco", "voc", "yolo", "imagenet", "csv"], required=False,
        help_text="coco, voc or yolo for an object detection version (default coco); imagenet "
                  "(one folder per class) for an image classification version (its default); "
                  "csv (text,label,split) for a text classification version (its default).")


#: sample ids one request of a version's items may name (the console asks for a page of 48)
MAX_VERSION_ITEMS = 100


class DatasetVersionItemsQuery(serializers.Serializer):
    sample_id = serializers.ListField(
        child=serializers.UUIDField(), min_length=1, max_length=MAX_VERSION_ITEMS,
        help_text=f"Sample ids (repeat the parameter: ?sample_id=a&sample_id=b), 1 to "
                  f"{MAX_VERSION_ITEMS}.")


class DatasetVersionItemOutput(serializers.Serializer):
    """A sample as the version froze it: its split and annotations at freezing time, which later
    edits of the sample do not change (what a model trained on the version was measured
    against)."""

    sample_id = serializers.UUIDField()
    split = serializers.CharField(help_text="train, val or test")
    width = serializers.IntegerField(source="sample.width", help_text="px, upright image")
    height = serializers.IntegerField(source="sample.height", help_text="px, upright image")
    class_index = serializers.IntegerField(
        allow_null=True, help_text="Image classification: the label's index into the version's "
                                   "labels; null in an object detection version.")
    boxes = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(), min_length=5, max_length=5),
        help_text="Object detection: [x1, y1, x2, y2, class_index] per box, xyxy px of the "
                  "upright image, class_index into the version's labels; [] otherwise.")


class DatasetVersionRef(serializers.Serializer):
    """A dataset version as other resources name it (lineage): ``<dataset_name> v<number>``."""

    id = serializers.UUIDField()
    dataset_id = serializers.UUIDField()
    dataset_name = serializers.CharField(source="dataset.name")
    number = serializers.IntegerField()
