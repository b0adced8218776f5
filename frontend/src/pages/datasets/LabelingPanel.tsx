// Classification labeling, keyboard first: a class's key (shown on its button; hotkeys.ts) or a
// click sets the class, saves at once (no save button) and moves on to the next unlabeled sample;
// arrows or N / P move without labeling; Ctrl+Z / Ctrl+Shift+Z undo and redo (useLabelHistory).
// A model's suggestion (pre-labeling) shows as a dashed chip, "Suggested: cat 87%": Enter (or its
// Accept button) makes it the label, an undoable step like a key; a class key labels instead.
import { BulbOutlined, CloseOutlined, QuestionCircleOutlined } from "@ant-design/icons";
import { App, Button, Card, Space, Tag, Tooltip, Typography } from "antd";
import { useEffect, useMemo, useRef } from "react";
import { useTranslation } from "react-i18next";

import type { Dataset, Sample } from "../../api/queries/datasets";
import { useLabelSample } from "../../api/queries/labeling";
import { useAcceptSuggestions, useRejectSuggestions } from "../../api/queries/prelabel";
import { useCanEdit } from "../../api/queries/projects";
import { EditorOnly, ReadOnlyTag } from "../../components/ReadOnly";
import { assignHotkeys, classIdForKey } from "./hotkeys";
import { classLabelIdOf, classLabelOf, isTypingTarget, nextUnlabeledId } from "./labeling";
import { HotkeyEditorButton, KeyBadge, UndoRedoButtons } from "./LabelingControls";
import { classSuggestionOf, percent } from "./suggestions";
import type { LabelUndo } from "./useLabelHistory";

/** What the gallery gives a labeling panel, classification's or detection's. */
export interface LabelingPanelProps {
  projectId: string;
  dataset: Dataset;
  /** the loaded samples, in gallery order (for next / previous / next unlabeled) */
  samples: Sample[];
  current: Sample;
  onNavigate: (sampleId: string) => void;
  onClose: () => void;
}

export function LabelingPanel(props: LabelingPanelProps & { history: LabelUndo }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const { history } = props;
  const label = useLabelSample(props.projectId, props.dataset.id);
  const classes = useMemo(() => [...props.dataset.class_labels].sort((a, b) => a.position - b.position), [props.dataset.class_labels]);
  const keys = useMemo(() => assignHotkeys(classes), [classes]);
  const currentLabel = classLabelOf(props.current);
  const index = props.samples.findIndex((s) => s.id === props.current.id);
  const canEdit = useCanEdit(props.projectId);
  const acceptSuggestion = useAcceptSuggestions(props.projectId, props.dataset.id);
  const rejectSuggestion = useRejectSuggestions(props.projectId, props.dataset.id);
  const suggestion = currentLabel === null ? classSuggestionOf(props.current) : null;

  const assign = (classLabelId: string | null) => {
    const { current } = props;
    const before = classLabelIdOf(current);
    const following = classLabelId ? nextUnlabeledId(props.samples, current.id) : null;
    label.mutate(
      // If-Match: a label someone else gave this sample since the gallery loaded is not overwritten
      { sampleId: current.id, classLabelId, etag: current.etag },
      {
        onSuccess: (sample) => {
          history.record({ changes: [{ sampleId: sample.id, before, after: classLabelId, etag: sample.etag }] });
          if (!classLabelId) return;
          void message.success({ content: t("labeling.saved", { label: classLabelOf(sample) ?? "" }), duration: 1 });
          if (following) props.onNavigate(following);
          else void message.info(t("labeling.allLabeled"));
        },
        onError: (error) => history.reportLabelError(error),
      },
    );
  };

  // the model's suggestion becomes the label: a label step like a key (Ctrl+Z takes it back)
  const accept = () => {
    const { current } = props;
    const offered = classLabelOf(current) === null ? classSuggestionOf(current) : null;
    if (!offered || acceptSuggestion.isPending) return;
    const before = classLabelIdOf(current);
    const following = nextUnlabeledId(props.samples, current.id);
    acceptSuggestion.mutate(
      { sampleId: current.id, suggestionIds: [offered.id], etag: current.etag },
      {
        onSuccess: (sample) => {
          history.record({ changes: [{ sampleId: sample.id, before, after: classLabelIdOf(sample), etag: sample.etag }] });
          void message.success({ content: t("labeling.accepted", { label: classLabelOf(sample) ?? "" }), duration: 1 });
          if (following) props.onNavigate(following);
          else void message.info(t("labeling.allLabeled"));
        },
        onError: (error) => history.reportLabelError(error),
      },
    );
  };

  const move = (step: number) => {
    const target = props.samples[index + step];
    if (target) props.onNavigate(target.id);
  };

  // the latest handlers for the one window listener
  const handlers = useRef({ assign, accept, move, close: props.onClose, keys, canEdit });
  handlers.current = { assign, accept, move, close: props.onClose, keys, canEdit };

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.ctrlKey || event.metaKey || event.altKey || isTypingTarget(event.target)) return;
      const h = handlers.current;
      const key = event.key.toLowerCase();
      const classId = classIdForKey(h.keys, event);
      if (classId !== null) {
        // a viewer's keys label nothing: the panel only browses
        if (!h.canEdit) return;
        event.preventDefault();
        h.assign(classId);
      } else if (event.key === "Enter") {
        if (!h.canEdit) return;
        event.preventDefault();
        h.accept();
      } else if (event.key === "ArrowRight" || key === "n") {
        event.preventDefault();
        h.move(1);
      } else if (event.key === "ArrowLeft" || key === "p") {
        event.preventDefault();
        h.move(-1);
      } else if (event.key === "Escape") {
        h.close();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  return (
    <Card
      size="small"
      style={{ width: 320, flex: "none", position: "sticky", top: 16 }}
      title={
        <Space size={6}>
          {t("labeling.title")}
          {!canEdit && <ReadOnlyTag />}
          <Tooltip title={t("labeling.hint")}>
            <QuestionCircleOutlined aria-label={t("labeling.hint")} style={{ color: "rgba(0,0,0,0.45)" }} />
          </Tooltip>
        </Space>
      }
      extra={<Button type="text" size="small" icon={<CloseOutlined />} onClick={props.onClose} aria-label={t("common.cancel")} />}
      data-testid="labeling-panel"
    >
      <Space orientation="vertical" style={{ width: "100%" }}>
        <img
          src={props.current.image_url ?? undefined}
          alt={props.current.original_name}
          style={{ width: "100%", height: 136, objectFit: "contain", background: "#fafafa", imageRendering: props.current.width < 120 ? "pixelated" : "auto" }}
        />
        {/* name and label on one line, the hint behind the title's (?) icon: the whole panel,
            class buttons included, fits beside the gallery at 1280x720 */}
        <div style={{ display: "flex", gap: 8, alignItems: "baseline", justifyContent: "space-between" }}>
          <Typography.Text ellipsis title={props.current.original_name} style={{ minWidth: 0 }}>
            {props.current.original_name}
          </Typography.Text>
          <Typography.Text style={{ flex: "none" }}>
            {t("labeling.current")}: {currentLabel ? <Tag color="blue">{currentLabel}</Tag> : <Tag>{t("labeling.none")}</Tag>}
          </Typography.Text>
        </div>
        {suggestion && (
          <div style={{ display: "flex", gap: 6, alignItems: "center", flexWrap: "wrap" }}>
            <Tag icon={<BulbOutlined />} color="gold" style={{ borderStyle: "dashed", marginInlineEnd: 0 }} data-testid="suggestion-chip" title={suggestion.class_label}>
              {t("labeling.suggested", { label: suggestion.class_label, percent: percent(suggestion.score) })}
            </Tag>
            {canEdit && (
              <>
                <Button size="small" type="primary" ghost onClick={accept} loading={acceptSuggestion.isPending}>
                  <KeyBadge hotkey="↵" />
                  {t("labeling.accept")}
                </Button>
                <Button
                  size="small"
                  type="text"
                  onClick={() => rejectSuggestion.mutate({ sampleId: props.current.id, suggestionIds: [suggestion.id] }, { onError: (error) => history.reportLabelError(error) })}
                  loading={rejectSuggestion.isPending}
                >
                  {t("labeling.reject")}
                </Button>
              </>
            )}
          </div>
        )}
        <EditorOnly canEdit={canEdit}>
          <Space wrap size={[6, 6]} role="group" aria-label={t("detection.classes")}>
            {classes.map((c) => (
              <Button
                key={c.id}
                type={c.name === currentLabel ? "primary" : "default"}
                title={c.name}
                onClick={() => assign(c.id)}
                disabled={label.isPending || !canEdit}
              >
                <KeyBadge hotkey={keys.get(c.id)} />
                <span style={{ maxWidth: 200, overflow: "hidden", textOverflow: "ellipsis" }}>{c.name}</span>
              </Button>
            ))}
          </Space>
        </EditorOnly>
        <div style={{ display: "flex", justifyContent: "space-between", alignItems: "center", gap: 8 }}>
          <UndoRedoButtons onUndo={history.undo} onRedo={history.redo} canUndo={history.canUndo} canRedo={history.canRedo} disabled={!canEdit || history.busy} />
          {canEdit && <HotkeyEditorButton projectId={props.projectId} datasetId={props.dataset.id} classes={classes} />}
        </div>
        <Space wrap>
          <Button size="small" onClick={() => move(-1)} disabled={index <= 0}>
            {t("labeling.previous")}
          </Button>
          <Button size="small" onClick={() => move(1)} disabled={index < 0 || index >= props.samples.length - 1}>
            {t("labeling.next")}
          </Button>
          <Button
            size="small"
            onClick={() => {
              const next = nextUnlabeledId(props.samples, props.current.id);
              if (next) props.onNavigate(next);
              else void message.info(t("labeling.allLabeled"));
            }}
          >
            {t("labeling.nextUnlabeled")}
          </Button>
          <Button size="small" danger onClick={() => assign(null)} disabled={!currentLabel || label.isPending || !canEdit}>
            {t("labeling.clear")}
          </Button>
        </Space>
      </Space>
    </Card>
  );
}
