"""The readers of stored English text (sampan.core.stored_text): sentences inside sentences,
optional parts, a value repeated in one sentence, lists joined by "; " whose parts hold "; "
themselves, and anything they do not read shown as stored. The sentences are the apps' own
(their catalogues hold the Chinese)."""

from __future__ import annotations

from django.utils import translation

from sampan.compression.stored_texts import PICK_REASONS
from sampan.core.stored_text import Joined, Templates, read_entries, read_text
from sampan.datasets import imports, versions
from sampan.datasets.report_texts import REJECTED, VERSION_FLAGS
from sampan.fleet.stored_texts import INCOMPATIBILITIES, ROLLBACK_REASONS


def test_a_sentence_inside_a_sentence_is_read_only_when_its_reader_reads_it() -> None:
    known = imports.BOXES_NOT_IMPORTED % {"problem": "corrupt png image", "boxes": 2}
    unknown = imports.BOXES_NOT_IMPORTED % {"problem": "the disk is on fire", "boxes": 2}
    with translation.override("zh-hans"):
        assert REJECTED.read(known) == "损坏的 png 图像；其 2 个框未导入"
        assert REJECTED.read(unknown) == unknown  # not a sentence of the image rule
        assert REJECTED.read("") == ""
    assert REJECTED.read(known) == known  # no language asked: as stored


def test_a_value_used_twice_must_be_the_same_twice() -> None:
    values = {"large": "cat", "large_samples": 9, "small": "owl", "small_samples": 3,
              "ratio": 3.0}
    flag = versions.CLASS_IMBALANCE % values
    forged = flag.replace("label more 'owl'", "label more 'emu'")
    with translation.override("zh-hans"):
        assert VERSION_FLAGS.read(flag).endswith("或标注更多 'owl' 样本")
        assert VERSION_FLAGS.read(forged) == forged


def test_joined_parts_may_hold_the_separator_and_an_unknown_part_keeps_all_as_stored() -> None:
    needs = "the model needs onnxruntime >= 1.17.0; the device has 1.16.3"
    providers = ("the model needs the execution provider(s) CUDAExecutionProvider; the device "
                 "offers none")
    joined = f"{needs}; {providers}"
    assert INCOMPATIBILITIES.split(joined) == [needs, providers]
    assert INCOMPATIBILITIES.split("out of memory; " + needs) is None
    with translation.override("zh-hans"):
        assert INCOMPATIBILITIES.read(joined) == (
            "模型需要 onnxruntime >= 1.17.0；设备上的版本为 1.16.3；"
            "模型需要执行提供程序（execution provider）CUDAExecutionProvider；设备提供的是 无")
        assert INCOMPATIBILITIES.read("out of memory; " + needs) == "out of memory; " + needs
        # a text a placeholder can hold stays inside it, as stored
        assert INCOMPATIBILITIES.read(f"{needs}; out of memory") == (
            "模型需要 onnxruntime >= 1.17.0；设备上的版本为 1.16.3; out of memory")


def test_a_persons_own_words_stay_inside_a_sentence_of_the_platform() -> None:
    reason = "wrong labels; the night shift saw it; 1 device(s) ran no model before and keep " \
             "this one"
    with translation.override("zh-hans"):
        assert ROLLBACK_REASONS.read(reason) == (
            "wrong labels; the night shift saw it；1 台设备之前未运行任何模型，保留此版本")


def test_optional_parts_of_the_picks_reason() -> None:
    with_note = ("no candidate stays within the accuracy budget on cam-1: keep the float model."
                 " Not measured: int8, res160; the pick is the fastest of those measured.")
    without = "no candidate stays within the accuracy budget on cam-1: keep the float model."
    with translation.override("zh-hans"):
        assert PICK_REASONS.read(with_note) == (
            "在cam-1上没有候选满足精度预算：保留浮点模型。"
            "未测量：int8, res160；所选的是已测量候选中最快的。")
        assert PICK_REASONS.read(without) == "在cam-1上没有候选满足精度预算：保留浮点模型。"


def test_the_language_is_read_at_each_call_not_kept_with_the_parsed_text() -> None:
    text = "same content as a.png"
    reader = Templates(imports.SAME_CONTENT)
    with translation.override("zh-hans"):
        assert read_text(text, reader) == "与 a.png 内容相同"
    assert read_text(text, reader) == text
    with translation.override("zh-hans"):
        assert read_entries([{"name": "b.png", "reason": text}, "odd", {"name": "c"}],
                            reader) == [{"name": "b.png", "reason": "与 a.png 内容相同"}, "odd",
                                        {"name": "c"}]


def test_joined_without_a_joiner_keeps_the_separator() -> None:
    reader = Joined(Templates(imports.SAME_CONTENT), separator=" | ")
    with translation.override("zh-hans"):
        assert reader.read("same content as a | same content as b") == (
            "与 a 内容相同 | 与 b 内容相同")
