// Undo and redo of classification labels (labelHistory.ts keeps the steps): Ctrl/Cmd+Z undoes
// the last label set, cleared or given in bulk by writing the earlier labels back to the server;
// Ctrl/Cmd+Shift+Z or Ctrl/Cmd+Y redoes. One history per gallery, so the labeling panel and the
// bulk toolbar share it. A write refused because someone else labeled the sample since (412) is
// shown with a Reload action and leaves the history as it was.
import { useQueryClient } from "@tanstack/react-query";
import { App, Button, Space } from "antd";
import { useCallback, useEffect, useRef, useState } from "react";
import { useTranslation } from "react-i18next";

import { datasetKeys, type Sample } from "../../api/queries/datasets";
import { isStaleWrite, postBulkLabel, putSampleLabel, replaceCachedSample } from "../../api/queries/labeling";
import { useErrorText, useReportError } from "../../components/errors";
import { emptyLabelHistory, labelHistoryRecord, labelHistoryRedone, labelHistoryUndone, labelWrites, nextRedo, nextUndo, type LabelHistory, type LabelStep } from "./labelHistory";
import { isTypingTarget, undoRedoOfKey } from "./labeling";

export interface LabelUndo {
  record: (step: LabelStep) => void;
  undo: () => void;
  redo: () => void;
  canUndo: boolean;
  canRedo: boolean;
  /** an undo or redo is being written */
  busy: boolean;
  /** Reports a failed label write: a 412 with a Reload action, anything else as a message. */
  reportLabelError: (error: unknown) => void;
}

/**
 * The gallery's label history. After an undo or redo of one sample's label, `onShow(sample,
 * labeled)` gives the gallery the sample as stored now and whether a label was set (a redo of a
 * label moves on as the label did; an undo shows the sample, so the person sees what came back).
 * `enabled`: listen to the keys (classification).
 */
export function useLabelHistory(
  projectId: string,
  datasetId: string,
  options: { enabled: boolean; onShow: (sample: Sample, labeled: boolean) => void },
): LabelUndo {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const queryClient = useQueryClient();
  const reportError = useReportError();
  const errorText = useErrorText();
  const [history, setHistory] = useState<LabelHistory>(emptyLabelHistory);
  const [busy, setBusy] = useState(false);
  const latest = useRef({ history, busy, onShow: options.onShow });
  latest.current = { history, busy, onShow: options.onShow };

  const reportLabelError = useCallback(
    (error: unknown) => {
      if (!isStaleWrite(error)) {
        reportError(error);
        return;
      }
      const key = "stale-label";
      const reload = () => {
        message.destroy(key);
        void queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, datasetId) });
      };
      void message.error({
        key,
        duration: 8,
        content: (
          <Space size="small" data-testid="stale-label">
            {errorText(error)}
            <Button size="small" onClick={reload}>
              {t("labeling.reload")}
            </Button>
          </Space>
        ),
      });
    },
    [reportError, errorText, message, queryClient, projectId, datasetId, t],
  );

  const record = useCallback((step: LabelStep) => setHistory((h) => labelHistoryRecord(h, step)), []);

  const apply = useCallback(
    async (direction: "undo" | "redo") => {
      const { history: h, busy: running } = latest.current;
      const step = direction === "undo" ? nextUndo(h) : nextRedo(h);
      if (!step || running) return;
      latest.current.busy = true; // a second key press before the re-render must not send it twice
      setBusy(true);
      const etags = new Map<string, string>();
      let saved: Sample | null = null;
      try {
        for (const write of labelWrites(step, direction)) {
          if (step.changes.length === 1) {
            const [sampleId] = write.sampleIds as [string];
            saved = await putSampleLabel(projectId, sampleId, write.classLabelId, write.etag);
            etags.set(sampleId, saved.etag);
            replaceCachedSample(queryClient, projectId, datasetId, saved);
          } else {
            await postBulkLabel(projectId, datasetId, write.sampleIds, write.classLabelId);
          }
        }
        setHistory((current) => (direction === "undo" ? labelHistoryUndone(current, step, etags) : labelHistoryRedone(current, step, etags)));
        const [only] = step.changes;
        if (saved && only) latest.current.onShow(saved, direction === "redo" && only.after !== null);
        void message.info({ content: t(direction === "undo" ? "labeling.undone" : "labeling.redone", { count: step.changes.length }), duration: 1 });
      } catch (error) {
        reportLabelError(error);
      } finally {
        setBusy(false);
        void queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, datasetId) });
      }
    },
    [projectId, datasetId, queryClient, message, t, reportLabelError],
  );
  const undo = useCallback(() => void apply("undo"), [apply]);
  const redo = useCallback(() => void apply("redo"), [apply]);

  const { enabled } = options;
  useEffect(() => {
    if (!enabled) return;
    const onKey = (event: KeyboardEvent) => {
      const action = undoRedoOfKey(event);
      if (action === null || isTypingTarget(event.target)) return; // a text field's own undo
      event.preventDefault();
      void apply(action);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [enabled, apply]);

  return { record, undo, redo, canUndo: history.past.length > 0, canRedo: history.future.length > 0, busy, reportLabelError };
}
