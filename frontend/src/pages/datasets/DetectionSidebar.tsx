// The side column of the detection drawer: the classes (with their keys and colours, a field to
// add one, and the key editor), the save state, a model's suggestions, the "No objects" mark, and
// the list of the open sample's boxes.
import { CheckOutlined, CloseOutlined, DeleteOutlined, PlusOutlined, StopOutlined } from "@ant-design/icons";
import { Alert, Button, Input, Space, Tag, Tooltip, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import { useAddClassLabels } from "../../api/queries/datasets";
import { useReportError } from "../../components/errors";
import type { Box } from "./boxes";
import { HotkeyEditorButton, KeyBadge, type ClassLabel } from "./LabelingControls";
import { percent, type SuggestedBox } from "./suggestions";
import type { BoxAutosave } from "./useBoxAutosave";

export type { ClassLabel };

/**
 * A model's suggested boxes of the open image, best first: each with its class and score, Accept
 * and Reject; "Accept all" (Enter) and "Reject all" above. Nothing when there is none.
 */
export function SuggestionList(props: {
  suggestions: SuggestedBox[];
  nameOf: (classLabelId: string) => string;
  colourOf: (classLabelId: string) => string;
  /** ids of the suggestions; null: all of them */
  onAccept: (ids: string[] | null) => void;
  onReject: (ids: string[] | null) => void;
  readOnly?: boolean;
}) {
  const { t } = useTranslation();
  if (props.suggestions.length === 0) return null;
  return (
    <div data-testid="suggestions" style={{ border: "1px dashed #faad14", borderRadius: 6, padding: 8, background: "#fffbe6" }}>
      <div style={{ display: "flex", justifyContent: "space-between", alignItems: "center", gap: 4, flexWrap: "wrap" }}>
        <Typography.Text strong>{t("detection.suggestions", { count: props.suggestions.length })}</Typography.Text>
        {!props.readOnly && (
          <Space size={4}>
            <Button size="small" type="primary" onClick={() => props.onAccept(null)}>
              <KeyBadge hotkey="↵" />
              {t("detection.acceptAll")}
            </Button>
            <Button size="small" onClick={() => props.onReject(null)}>
              {t("detection.rejectAll")}
            </Button>
          </Space>
        )}
      </div>
      <ul aria-label={t("detection.suggestionList")} style={{ listStyle: "none", margin: "4px 0 0", padding: 0 }}>
        {props.suggestions.map((s) => {
          const name = props.nameOf(s.classLabelId);
          return (
            <li key={s.id} data-testid="suggestion-row" style={{ display: "flex", alignItems: "center", gap: 4, padding: "2px 0" }}>
              <Tag color={props.colourOf(s.classLabelId)} style={{ borderStyle: "dashed", marginInlineEnd: 0 }} data-testid="suggestion-class">
                {name}
              </Tag>
              <Typography.Text type="secondary" style={{ fontSize: 12, flex: 1 }}>
                {percent(s.score)} · {t("detection.size", { width: Math.round(s.x2 - s.x1), height: Math.round(s.y2 - s.y1) })}
              </Typography.Text>
              {!props.readOnly && (
                <>
                  <Button type="text" size="small" icon={<CheckOutlined />} aria-label={t("detection.acceptOne", { label: name, percent: percent(s.score) })} onClick={() => props.onAccept([s.id])} />
                  <Button type="text" size="small" danger icon={<CloseOutlined />} aria-label={t("detection.rejectOne", { label: name, percent: percent(s.score) })} onClick={() => props.onReject([s.id])} />
                </>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/** The key that marks an image "no objects" (and unmarks it): not a class key (0-9, a-z). */
export const NO_OBJECTS_KEY = "-";

/** "No objects": checks an image without boxes as holding nothing to box (a background image). */
export function NoObjectsButton(props: { checked: boolean; disabled: boolean; onToggle: () => void }) {
  const { t } = useTranslation();
  return (
    <Tooltip title={props.checked ? t("detection.noObjectsUndo") : t("detection.noObjectsHint")}>
      <Button size="small" icon={<StopOutlined />} type={props.checked ? "primary" : "default"} aria-pressed={props.checked} onClick={props.onToggle} disabled={props.disabled} data-testid="no-objects">
        <KeyBadge hotkey={NO_OBJECTS_KEY} />
        {t("detection.noObjects")}
      </Button>
    </Tooltip>
  );
}

export function ClassPicker(props: {
  projectId: string;
  datasetId: string;
  classes: ClassLabel[];
  /** class id -> its labeling key (hotkeys.ts) */
  keys: Map<string, string>;
  activeClass: ClassLabel | null;
  colourOf: (index: number) => string;
  onChoose: (cls: ClassLabel) => void;
  readOnly?: boolean;
}) {
  const { t } = useTranslation();
  const add = useAddClassLabels(props.projectId, props.datasetId);
  const reportError = useReportError();
  const [draft, setDraft] = useState("");
  const submit = () => {
    const name = draft.trim();
    if (name) add.mutate([name], { onSuccess: () => setDraft(""), onError: (error) => reportError(error) });
  };

  return (
    <Space orientation="vertical" size="small" style={{ width: "100%" }}>
      <div style={{ display: "flex", justifyContent: "space-between", alignItems: "center" }}>
        <Typography.Text strong>{t("detection.classes")}</Typography.Text>
        {!props.readOnly && <HotkeyEditorButton projectId={props.projectId} datasetId={props.datasetId} classes={props.classes} />}
      </div>
      {props.classes.length === 0 && <Alert type="info" showIcon title={t("detection.noClasses")} />}
      <Space wrap size={[6, 6]} role="group" aria-label={t("detection.classes")}>
        {props.classes.map((c, i) => {
          const active = c.id === props.activeClass?.id;
          return (
            <Button
              key={c.id}
              size="small"
              type={active ? "primary" : "default"}
              aria-pressed={active}
              onClick={() => props.onChoose(c)}
              icon={<span style={{ display: "inline-block", width: 10, height: 10, borderRadius: 2, background: props.colourOf(i), boxShadow: "0 0 0 1px #fff" }} />}
            >
              <KeyBadge hotkey={props.keys.get(c.id)} />
              {c.name}
            </Button>
          );
        })}
      </Space>
      <Space.Compact size="small" style={{ width: "100%" }}>
        <Input
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onPressEnter={submit}
          placeholder={t("datasets.addClassPlaceholder")}
          aria-label={t("datasets.addClass")}
          maxLength={200}
          disabled={props.readOnly}
          title={props.readOnly ? t("role.needsEditor") : undefined}
        />
        <Button icon={<PlusOutlined />} onClick={submit} loading={add.isPending} disabled={props.readOnly} aria-label={t("datasets.addClass")} />
      </Space.Compact>
    </Space>
  );
}

export function SaveState({ autosave }: { autosave: BoxAutosave }) {
  const { t } = useTranslation();
  const text = {
    idle: "",
    pending: t("detection.status.pending"),
    saving: t("detection.status.saving"),
    saved: t("detection.status.saved"),
    error: t("detection.status.error"),
  }[autosave.status];
  const type = autosave.status === "error" ? "danger" : autosave.status === "saved" ? "success" : "secondary";
  return (
    <Typography.Text type={type} data-testid="save-status" role="status">
      {text}
    </Typography.Text>
  );
}

export function BoxList(props: {
  boxes: Box[];
  /** the image is checked "no objects" */
  noObjects?: boolean;
  selectedId: string | null;
  nameOf: (classLabelId: string) => string;
  colourOf: (box: Box) => string;
  onSelect: (id: string) => void;
  onDelete: (id: string) => void;
  readOnly?: boolean;
}) {
  const { t } = useTranslation();
  return (
    <div>
      <Typography.Text strong>{t("detection.boxes", { count: props.boxes.length })}</Typography.Text>
      {props.boxes.length === 0 ? (
        <Typography.Paragraph type={props.noObjects ? "success" : "secondary"} style={{ margin: "4px 0 0" }} data-testid="no-boxes">
          {props.noObjects ? t("detection.checkedNoObjects") : t("detection.noBoxes")}
        </Typography.Paragraph>
      ) : (
        <ul aria-label={t("detection.boxList")} style={{ listStyle: "none", margin: "4px 0 0", padding: 0 }} data-testid="box-list">
          {props.boxes.map((box, i) => {
            const name = props.nameOf(box.classLabelId);
            const selected = box.id === props.selectedId;
            return (
              <li
                key={box.id}
                data-testid="box-row"
                style={{ display: "flex", alignItems: "center", gap: 4, padding: "2px 4px", borderRadius: 4, background: selected ? "#e6f4ff" : undefined }}
              >
                <Button
                  type="text"
                  size="small"
                  aria-pressed={selected}
                  onClick={() => props.onSelect(box.id)}
                  style={{ flex: 1, justifyContent: "flex-start", minWidth: 0 }}
                >
                  <span>{i + 1}.</span>
                  <Tag color={props.colourOf(box)} style={{ marginInlineEnd: 0 }} data-testid="box-class">
                    {name}
                  </Tag>
                  <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                    {t("detection.size", { width: Math.round(box.x2 - box.x1), height: Math.round(box.y2 - box.y1) })}
                  </Typography.Text>
                </Button>
                {!props.readOnly && <Button
                  type="text"
                  size="small"
                  danger
                  icon={<DeleteOutlined />}
                  aria-label={t("detection.deleteBox", { number: i + 1, label: name })}
                  onClick={() => props.onDelete(box.id)}
                />}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
