// The samples of a text classification dataset: a list of texts paged by the API (instead of the
// image gallery), labeled from the keyboard as the image panel labels. A current row
// (highlighted; j / k or the arrows move it, across pages too); a class's key (hotkeys.ts, shown
// on its button) labels it and moves to the next unlabeled text; Enter accepts a model's
// suggestion; Ctrl+Z / Ctrl+Shift+Z undo and redo (useLabelHistory, shared with the bulk label).
// A search box (the API's `search`, debounced), the gallery's filters (all, unlabeled, a class;
// kept in the URL) and order, checkboxes and "Label selected as…" (the bulk endpoint). Texts are
// React text, never HTML: long ones are cut with an ellipsis and a "Show all" toggle.
import { BulbOutlined, QuestionCircleOutlined, SearchOutlined } from "@ant-design/icons";
import { App, Button, Dropdown, Input, Select, Space, Table, Tag, Tooltip, Typography } from "antd";
import type { TFunction } from "i18next";
import { useEffect, useMemo, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import { useSearchParams } from "react-router";

import { useSamplePage, type Dataset, type Sample, type SampleFilter } from "../../api/queries/datasets";
import { useBulkLabel, useLabelSample } from "../../api/queries/labeling";
import { useAcceptSuggestions } from "../../api/queries/prelabel";
import { useCanEdit } from "../../api/queries/projects";
import { ErrorAlert } from "../../components/errors";
import { EditorOnly, ReadOnlyTag } from "../../components/ReadOnly";
import { filterFromParams, paramsWithFilter } from "./galleryFilter";
import { assignHotkeys, classIdForKey } from "./hotkeys";
import { classLabelIdOf, classLabelOf, isTypingTarget, nextUnlabeledId } from "./labeling";
import { HotkeyEditorButton, KeyBadge, UndoRedoButtons } from "./LabelingControls";
import { classSuggestionOf, effectiveOrder, percent, type SampleOrder } from "./suggestions";
import styles from "./TextSampleList.module.css";
import { useLabelHistory } from "./useLabelHistory";

export const TEXT_PAGE_SIZES = [20, 50, 100, 200];
const DEFAULT_PAGE_SIZE = 50;
/** The search box asks the API this long after the last key typed. */
export const SEARCH_DELAY_MS = 300;
/** A text of more lines or characters than these is cut in the list ("Show all" shows it whole). */
const CUT_LINES = 3;
const CUT_CHARS = 280;
/** The API sends a text's first 10,000 characters (`text_length` is the whole text's). */
const SERVED_CHARS = 10_000;

/** CSS-module classes joined (a class missing from the module is left out). */
const cx = (...names: (string | undefined | false)[]) => names.filter(Boolean).join(" ");

const UNLABELED = "\u0000unlabeled";
const ALL = "\u0000all";

/** The start of a long text as the list shows it ("…" at the end), or null for a text shown whole. */
export function cutText(text: string): string | null {
  const lines = text.split("\n");
  let cut = lines.length > CUT_LINES ? lines.slice(0, CUT_LINES).join("\n") : text;
  if (cut.length > CUT_CHARS) {
    cut = cut.slice(0, CUT_CHARS);
    if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1); // not half an emoji
  }
  return cut.length === text.length ? null : `${cut.trimEnd()}…`;
}

/** True when the API sent only the start of the text (`text_length` counts characters, not UTF-16 units). */
export function cutByServer(sample: Pick<Sample, "text" | "text_length">): boolean {
  if (sample.text_length > sample.text.length) return true;
  return sample.text.length >= SERVED_CHARS && sample.text_length > [...sample.text].length;
}

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

/** Keys typed into a text field are the field's; a checkbox (a row's selection) keeps the list's keys. */
function isTextEntry(target: EventTarget | null): boolean {
  if (target instanceof HTMLInputElement && (target.type === "checkbox" || target.type === "radio")) return false;
  return isTypingTarget(target);
}

/** Enter on a focused button or link presses it; the list does not take it too. */
function isControl(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && (["BUTTON", "A"].includes(target.tagName) || target.getAttribute("role") === "button");
}

export function TextSampleList({ projectId, dataset }: { projectId: string; dataset: Dataset }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const [params, setParams] = useSearchParams();
  const chosen = filterFromParams(params);
  const [searchDraft, setSearchDraft] = useState("");
  const search = useDebounced(searchDraft.trim(), SEARCH_DELAY_MS);
  const filter: SampleFilter = {
    ...(chosen.unlabeled ? { unlabeled: true } : chosen.label ? { label: chosen.label } : {}),
    order: effectiveOrder(chosen.order, dataset),
    ...(search ? { search } : {}),
  };
  const filterKey = JSON.stringify(filter);
  const [page, setPage] = useState(1);
  const [pageSize, setPageSize] = useState(DEFAULT_PAGE_SIZE);
  // the selected texts, each with its label when it was selected (what an undo writes back)
  const [selected, setSelected] = useState<ReadonlyMap<string, string | null>>(new Map());
  const [listedFilter, setListedFilter] = useState(filterKey);
  if (listedFilter !== filterKey) {
    // another filter or search: its first page, nothing selected
    setListedFilter(filterKey);
    setPage(1);
    setSelected(new Map());
  }

  const list = useSamplePage(projectId, dataset.id, filter, page, pageSize);
  const rows = useMemo(() => list.data?.results ?? [], [list.data]);
  const total = list.data?.count ?? 0;
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const waiting = list.isPlaceholderData; // the previous page's rows, while the one asked for loads
  const canEdit = useCanEdit(projectId);
  const classes = useMemo(() => [...dataset.class_labels].sort((a, b) => a.position - b.position), [dataset.class_labels]);
  const keys = useMemo(() => assignHotkeys(classes), [classes]);
  const label = useLabelSample(projectId, dataset.id);
  const bulk = useBulkLabel(projectId, dataset.id);
  const acceptSuggestion = useAcceptSuggestions(projectId, dataset.id);
  const [currentId, setCurrentId] = useState<string | null>(null);
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  // where the current row goes when the page asked for arrives
  const focusOnLoad = useRef<"first" | "last" | "unlabeled" | null>(null);
  // a text an undo showed stays current while the refetch brings it back onto a filtered page
  const shown = useRef<string | null>(null);
  const rowsRef = useRef(rows);
  rowsRef.current = rows;
  const current = rows.find((s) => s.id === currentId) ?? null;

  const history = useLabelHistory(projectId, dataset.id, {
    enabled: canEdit,
    // an undo shows the text; a redo of a label moves on as labeling does
    onShow: (sample, labeled) => {
      const id = labeled ? (nextUnlabeledId(rowsRef.current, sample.id) ?? sample.id) : sample.id;
      shown.current = id;
      setCurrentId(id);
    },
  });

  // a current row on every page: the one asked for, else the first
  useEffect(() => {
    if (waiting || rows.length === 0) return;
    const focus = focusOnLoad.current;
    if (focus) {
      focusOnLoad.current = null;
      shown.current = null;
      const target = focus === "last" ? rows.at(-1) : focus === "unlabeled" ? (rows.find((s) => classLabelOf(s) === null) ?? rows[0]) : rows[0];
      setCurrentId(target?.id ?? null);
      return;
    }
    if (currentId !== null && (rows.some((s) => s.id === currentId) || shown.current === currentId)) return;
    setCurrentId(rows[0]?.id ?? null);
  }, [rows, waiting, currentId]);

  const tableArea = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!currentId) return;
    const row = tableArea.current?.querySelector<HTMLElement>(`tr[data-row-key="${currentId}"]`); // ids are UUIDs
    row?.scrollIntoView?.({ block: "nearest" });
  }, [currentId]);

  const show = (id: string | null) => {
    shown.current = null;
    setCurrentId(id);
  };

  /** After `fromId` got a label: the next unlabeled text of the page, else of the next page. */
  const moveOn = (fromId: string) => {
    const next = nextUnlabeledId(rows, fromId);
    if (next) show(next);
    else if (filter.unlabeled) focusOnLoad.current = "unlabeled"; // the refetch fills the page with the next ones
    else if (page < pages) {
      focusOnLoad.current = "unlabeled";
      setPage(page + 1);
    } else void message.info(t("text.list.allLabeled"));
  };

  const assign = (classLabelId: string | null) => {
    const sample = current;
    if (!sample) return;
    const before = classLabelIdOf(sample);
    label.mutate(
      // If-Match: a label someone else gave this text since the page loaded is not overwritten
      { sampleId: sample.id, classLabelId, etag: sample.etag },
      {
        onSuccess: (saved) => {
          history.record({ changes: [{ sampleId: saved.id, before, after: classLabelId, etag: saved.etag }] });
          if (classLabelId) moveOn(saved.id);
        },
        onError: (error) => history.reportLabelError(error),
      },
    );
  };

  const accept = () => {
    const sample = current;
    const offered = sample && classLabelOf(sample) === null ? classSuggestionOf(sample) : null;
    if (!sample || !offered || acceptSuggestion.isPending) return;
    const before = classLabelIdOf(sample);
    acceptSuggestion.mutate(
      { sampleId: sample.id, suggestionIds: [offered.id], etag: sample.etag },
      {
        onSuccess: (saved) => {
          history.record({ changes: [{ sampleId: saved.id, before, after: classLabelIdOf(saved), etag: saved.etag }] });
          moveOn(saved.id);
        },
        onError: (error) => history.reportLabelError(error),
      },
    );
  };

  const move = (step: 1 | -1) => {
    const index = rows.findIndex((s) => s.id === currentId);
    const target = index < 0 ? rows[0] : rows[index + step];
    if (target) show(target.id);
    else if (waiting) return; // the next page is on its way: a second press must not skip one
    else if (step === 1 && page < pages) {
      focusOnLoad.current = "first";
      setPage(page + 1);
    } else if (step === -1 && page > 1) {
      focusOnLoad.current = "last";
      setPage(page - 1);
    }
  };

  // the latest handlers for the one window listener
  const handlers = useRef({ assign, accept, move, keys, canEdit });
  handlers.current = { assign, accept, move, keys, canEdit };
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.ctrlKey || event.metaKey || event.altKey || isTextEntry(event.target)) return;
      const h = handlers.current;
      // a class's key first: a class may have J or K as its key (then the arrows move)
      const classId = classIdForKey(h.keys, event);
      if (classId !== null) {
        if (!h.canEdit) return; // a viewer's keys label nothing
        event.preventDefault();
        h.assign(classId);
      } else if (event.key === "ArrowDown" || event.key.toLowerCase() === "j") {
        event.preventDefault();
        h.move(1);
      } else if (event.key === "ArrowUp" || event.key.toLowerCase() === "k") {
        event.preventDefault();
        h.move(-1);
      } else if (event.key === "Enter" && h.canEdit && !isControl(event.target)) {
        event.preventDefault();
        h.accept();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  const changeFilter = (change: Partial<SampleFilter>) =>
    setParams((p) => paramsWithFilter(p, { ...filterFromParams(p), ...change }), { replace: true });
  const labelFilter = filter.unlabeled ? UNLABELED : (filter.label ?? ALL);

  const bulkLabel = (classLabelId: string) => {
    const name = classes.find((c) => c.id === classLabelId)?.name ?? "";
    const changes = [...selected].map(([sampleId, before]) => ({ sampleId, before, after: classLabelId }));
    bulk.mutate(
      { sampleIds: changes.map((c) => c.sampleId), classLabelId },
      {
        onSuccess: () => {
          history.record({ changes });
          void message.success(t("text.list.bulkLabeled", { count: changes.length, label: name }));
          setSelected(new Map());
        },
        onError: (error) => history.reportLabelError(error),
      },
    );
  };

  const toggle = (id: string) =>
    setExpanded((prev) => {
      const next = new Set(prev);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const columns = [
    {
      title: t("text.list.text"),
      key: "text",
      render: (_: unknown, s: Sample) => <TextCell sample={s} expanded={expanded.has(s.id)} onToggle={toggle} t={t} />,
    },
    {
      title: t("text.list.label"),
      key: "label",
      width: 170,
      render: (_: unknown, s: Sample) => {
        const name = classLabelOf(s);
        return name ? (
          <Tag color="blue" title={name} className={styles.tag} data-testid="text-label">
            {name}
          </Tag>
        ) : (
          <Tag data-testid="text-label">{t("gallery.unlabeledTag")}</Tag>
        );
      },
    },
    {
      title: t("text.list.suggested"),
      key: "suggestion",
      width: 170,
      render: (_: unknown, s: Sample) => {
        const suggestion = classLabelOf(s) === null ? classSuggestionOf(s) : null;
        return (
          suggestion && (
            <Tag icon={<BulbOutlined />} color="gold" style={{ borderStyle: "dashed" }} title={suggestion.class_label} data-testid="text-suggestion">
              {suggestion.class_label} {percent(suggestion.score)}
            </Tag>
          )
        );
      },
    },
  ];

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }} data-testid="text-list">
      <Space wrap>
        <Input
          allowClear
          prefix={<SearchOutlined />}
          value={searchDraft}
          onChange={(e) => setSearchDraft(e.target.value)}
          placeholder={t("text.list.search")}
          aria-label={t("text.list.search")}
          style={{ width: 280 }}
          maxLength={200}
        />
        <Select
          aria-label={t("gallery.filter")}
          value={labelFilter}
          onChange={(value: string) =>
            changeFilter({ unlabeled: value === UNLABELED, label: value === UNLABELED || value === ALL ? undefined : value, noObjects: false })
          }
          style={{ minWidth: 180 }}
          options={[
            { value: ALL, label: t("text.list.all") },
            { value: UNLABELED, label: t("gallery.unlabeled") },
            ...classes.map((c) => ({ value: c.name, label: t("gallery.byLabel", { label: c.name }) })),
          ]}
        />
        <Select
          aria-label={t("gallery.sort")}
          value={filter.order}
          onChange={(order: SampleOrder) => changeFilter({ order })}
          style={{ minWidth: 170 }}
          options={[
            { value: "oldest", label: t("gallery.oldest") },
            { value: "uncertainty", label: t("gallery.uncertain") },
          ]}
        />
        {list.data && <Typography.Text type="secondary">{t("text.list.total", { count: total })}</Typography.Text>}
      </Space>

      <div style={{ display: "flex", flexWrap: "wrap", gap: 8, alignItems: "center", justifyContent: "space-between" }}>
        <Space wrap size={[6, 6]}>
          {!canEdit && <ReadOnlyTag />}
          <EditorOnly canEdit={canEdit}>
            <Space wrap size={[6, 6]} role="group" aria-label={t("text.list.classes")}>
              {classes.map((c) => (
                <Button
                  key={c.id}
                  size="small"
                  type={current && classLabelIdOf(current) === c.id ? "primary" : "default"}
                  title={c.name}
                  onClick={() => assign(c.id)}
                  disabled={!canEdit || !current}
                >
                  <KeyBadge hotkey={keys.get(c.id)} />
                  <span style={{ maxWidth: 200, overflow: "hidden", textOverflow: "ellipsis" }}>{c.name}</span>
                </Button>
              ))}
              {classes.length === 0 && <Typography.Text type="secondary">{t("datasets.noClasses")}</Typography.Text>}
            </Space>
          </EditorOnly>
          <Tooltip title={t("text.list.hint")}>
            <QuestionCircleOutlined aria-label={t("text.list.hint")} style={{ color: "rgba(0,0,0,0.45)" }} />
          </Tooltip>
        </Space>
        <Space wrap size={[6, 6]}>
          <UndoRedoButtons onUndo={history.undo} onRedo={history.redo} canUndo={history.canUndo} canRedo={history.canRedo} disabled={!canEdit || history.busy} />
          {canEdit && <HotkeyEditorButton projectId={projectId} datasetId={dataset.id} classes={classes} />}
          <Button size="small" danger onClick={() => assign(null)} disabled={!canEdit || !current || classLabelOf(current) === null || label.isPending}>
            {t("labeling.clear")}
          </Button>
        </Space>
      </div>

      {selected.size > 0 && (
        <Space wrap data-testid="text-selection">
          <Typography.Text>{t("gallery.selected", { count: selected.size })}</Typography.Text>
          <Dropdown
            disabled={classes.length === 0 || !canEdit}
            menu={{ items: classes.map((c) => ({ key: c.id, label: c.name })), onClick: ({ key }) => bulkLabel(key) }}
          >
            <Button size="small" type="primary" loading={bulk.isPending}>
              {t("gallery.labelSelected")}
            </Button>
          </Dropdown>
          <Button size="small" onClick={() => setSelected(new Map())}>
            {t("gallery.clearSelection")}
          </Button>
        </Space>
      )}

      {list.isError ? (
        <ErrorAlert error={list.error} onRetry={() => void list.refetch()} />
      ) : (
        <div ref={tableArea}>
          <Table<Sample>
            size="small"
            rowKey="id"
            dataSource={rows}
            columns={columns}
            loading={list.isPending || waiting}
            locale={{ emptyText: t("gallery.empty") }}
            rowClassName={(s) => cx(styles.row, s.id === currentId && styles.current)}
            onRow={(s) => ({ onClick: () => show(s.id), "aria-current": s.id === currentId ? "true" : undefined })}
            rowSelection={
              canEdit
                ? {
                    selectedRowKeys: [...selected.keys()],
                    preserveSelectedRowKeys: true,
                    onChange: (ids, picked) =>
                      setSelected((prev) => {
                        const byId = new Map(picked.filter(Boolean).map((s) => [s.id, s]));
                        const next = new Map<string, string | null>();
                        for (const key of ids) {
                          const id = String(key);
                          const sample = byId.get(id);
                          next.set(id, sample ? classLabelIdOf(sample) : (prev.get(id) ?? null));
                        }
                        return next;
                      }),
                  }
                : undefined
            }
            pagination={{
              current: page,
              pageSize,
              total,
              showSizeChanger: true,
              pageSizeOptions: TEXT_PAGE_SIZES,
              onChange: (nextPage, nextSize) => {
                if (nextSize !== pageSize) {
                  setPageSize(nextSize);
                  setPage(1);
                } else setPage(nextPage);
              },
            }}
          />
        </div>
      )}
    </Space>
  );
}

/** A text (a few lines, or whole with "Show all"), and its file name and line in small grey. */
function TextCell({ sample, expanded, onToggle, t }: { sample: Sample; expanded: boolean; onToggle: (id: string) => void; t: TFunction }) {
  const cut = cutText(sample.text);
  const whole = cut === null || expanded;
  return (
    <div>
      <div className={cx(styles.text, whole && cut !== null ? styles.full : styles.clamped)} data-testid="text-content">
        {whole ? sample.text : cut}
      </div>
      {cut !== null && (
        <Button
          type="link"
          size="small"
          style={{ paddingInline: 0, height: "auto" }}
          aria-expanded={expanded}
          onClick={(event) => {
            event.stopPropagation(); // not a click that makes the row current
            onToggle(sample.id);
          }}
        >
          {expanded ? t("text.list.showLess") : t("text.list.showAll")}
        </Button>
      )}
      {expanded && cutByServer(sample) && (
        <Typography.Text type="secondary" style={{ marginInlineStart: 8, fontSize: 12 }}>
          {t("text.list.cutByServer", { shown: SERVED_CHARS.toLocaleString(), total: sample.text_length.toLocaleString() })}
        </Typography.Text>
      )}
      <div className={styles.name} data-testid="text-name">
        {sample.original_name}
      </div>
    </div>
  );
}
