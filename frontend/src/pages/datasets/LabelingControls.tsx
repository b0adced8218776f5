// Pieces both labeling panels (classification and detection) show the same way: a class's key
// badge, the Undo / Redo buttons with their keys, and the editor of the classes' keys.
import { KeyOutlined, RedoOutlined, UndoOutlined } from "@ant-design/icons";
import { Button, Input, Modal, Space, Tooltip, Typography } from "antd";
import { useMemo, useState } from "react";
import { useTranslation } from "react-i18next";

import { isApiError } from "../../api/errors";
import type { Dataset } from "../../api/queries/datasets";
import { useSetHotkeys } from "../../api/queries/labeling";
import { useErrorText, useReportError } from "../../components/errors";
import { assignHotkeys } from "./hotkeys";

export type ClassLabel = Dataset["class_labels"][number];

/** The key that labels with a class, as a keyboard key on its button: "3", "C". */
export function KeyBadge({ hotkey }: { hotkey: string | undefined }) {
  if (!hotkey) return null;
  return (
    <Typography.Text keyboard data-testid="class-key">
      {hotkey.toUpperCase()}
    </Typography.Text>
  );
}

export function UndoRedoButtons(props: { onUndo: () => void; onRedo: () => void; canUndo: boolean; canRedo: boolean; disabled?: boolean }) {
  const { t } = useTranslation();
  return (
    <Space size="small">
      <Tooltip title="Ctrl+Z">
        <Button size="small" icon={<UndoOutlined />} onClick={props.onUndo} disabled={props.disabled || !props.canUndo}>
          {t("detection.undo")}
        </Button>
      </Tooltip>
      <Tooltip title="Ctrl+Shift+Z / Ctrl+Y">
        <Button size="small" icon={<RedoOutlined />} onClick={props.onRedo} disabled={props.disabled || !props.canRedo}>
          {t("detection.redo")}
        </Button>
      </Tooltip>
    </Space>
  );
}

/** "Change keys": a dialog listing the classes with the key each has and a field to choose one. */
export function HotkeyEditorButton(props: { projectId: string; datasetId: string; classes: ClassLabel[]; disabled?: boolean }) {
  const { t } = useTranslation();
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button size="small" type="link" icon={<KeyOutlined />} onClick={() => setOpen(true)} disabled={props.disabled || props.classes.length === 0} style={{ paddingInline: 0 }}>
        {t("hotkeys.change")}
      </Button>
      {open && <HotkeyEditor {...props} onClose={() => setOpen(false)} />}
    </>
  );
}

function HotkeyEditor(props: { projectId: string; datasetId: string; classes: ClassLabel[]; onClose: () => void }) {
  const { t } = useTranslation();
  const save = useSetHotkeys(props.projectId, props.datasetId);
  const reportError = useReportError();
  const errorText = useErrorText();
  const classes = useMemo(() => [...props.classes].sort((a, b) => a.position - b.position), [props.classes]);
  const [draft, setDraft] = useState<Record<string, string>>(() => Object.fromEntries(classes.map((c) => [c.id, c.hotkey])));
  const [errors, setErrors] = useState<Record<number, string>>({});
  // what each class's key will be with the keys typed so far (an empty field: the automatic key)
  const effective = useMemo(() => assignHotkeys(classes.map((c) => ({ ...c, hotkey: draft[c.id] ?? "" }))), [classes, draft]);

  const submit = () => {
    setErrors({});
    save.mutate(
      classes.map((c) => ({ class_label_id: c.id, hotkey: (draft[c.id] ?? "").trim() })),
      {
        onSuccess: props.onClose,
        onError: (error) => {
          // the API names the entry: hotkeys[<i>].hotkey, in the order sent (position order)
          const row = isApiError(error) ? /^hotkeys\[(\d+)\]/.exec(error.field ?? "")?.[1] : undefined;
          if (row !== undefined) setErrors({ [Number(row)]: errorText(error) });
          else reportError(error);
        },
      },
    );
  };

  return (
    <Modal open title={t("hotkeys.title")} onCancel={props.onClose} onOk={submit} okText={t("hotkeys.save")} confirmLoading={save.isPending}>
      <Typography.Paragraph type="secondary">{t("hotkeys.rule")}</Typography.Paragraph>
      <div role="list" aria-label={t("hotkeys.title")} style={{ display: "grid", gridTemplateColumns: "minmax(0, 1fr) 72px 56px", gap: "6px 12px", alignItems: "center" }}>
        {classes.map((c, i) => (
          <div role="listitem" key={c.id} style={{ display: "contents" }}>
            <Typography.Text ellipsis title={c.name}>
              {c.name}
            </Typography.Text>
            <Input
              size="small"
              maxLength={1}
              value={draft[c.id] ?? ""}
              placeholder={t("hotkeys.auto")}
              aria-label={t("hotkeys.keyOf", { name: c.name })}
              status={errors[i] ? "error" : undefined}
              onChange={(e) => setDraft((d) => ({ ...d, [c.id]: e.target.value }))}
              onPressEnter={submit}
            />
            <span data-testid="effective-key">
              <KeyBadge hotkey={effective.get(c.id)} />
            </span>
            {errors[i] && (
              <Typography.Text type="danger" role="alert" style={{ gridColumn: "1 / -1", fontSize: 12 }}>
                {errors[i]}
              </Typography.Text>
            )}
          </div>
        ))}
      </div>
    </Modal>
  );
}
