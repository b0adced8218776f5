// The sample gallery: server-side pages (up to 500 a page), thumbnails, filters by label or
// unlabeled, a selection for bulk labeling, and the labeling panel (classification) or drawer (detection).
import { App, Button, Checkbox, Dropdown, Empty, Pagination, Select, Space, Spin, Tag, Typography } from "antd";
import { useMemo, useState } from "react";
import { useTranslation } from "react-i18next";

import { useBulkLabel, useSamples, type Dataset, type Sample } from "../../api/queries/datasets";
import { ErrorAlert, useReportError } from "../../components/errors";
import { boxCountOf, classLabelOf } from "./labeling";
import { DetectionLabelingPanel } from "./DetectionLabelingPanel";
import { LabelingPanel } from "./LabelingPanel";

export const PAGE_SIZES = [50, 100, 200, 500];
const UNLABELED = "\u0000unlabeled";
const ALL = "\u0000all";

export function SampleGallery({ projectId, dataset }: { projectId: string; dataset: Dataset }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const reportError = useReportError();
  const [filter, setFilter] = useState<string>(ALL);
  const [page, setPage] = useState(1);
  const [pageSize, setPageSize] = useState(100);
  const [currentId, setCurrentId] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [selecting, setSelecting] = useState(false);
  const bulk = useBulkLabel(projectId, dataset.id);

  const samples = useSamples(projectId, dataset.id, {
    page,
    pageSize,
    ...(filter === UNLABELED ? { unlabeled: true } : filter !== ALL ? { label: filter } : {}),
  });
  const rows = useMemo(() => samples.data?.results ?? [], [samples.data]);
  const current = rows.find((s) => s.id === currentId) ?? null;
  const classification = dataset.task_type === "image_classification";

  const changeFilter = (value: string) => {
    setFilter(value);
    setPage(1);
    setSelected(new Set());
  };

  const toggle = (id: string) =>
    setSelected((prev) => {
      const next = new Set(prev);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const bulkLabel = (classLabelId: string) => {
    const name = dataset.class_labels.find((c) => c.id === classLabelId)?.name ?? "";
    bulk.mutate(
      { sampleIds: [...selected], classLabelId },
      {
        onSuccess: () => {
          void message.success(t("gallery.bulkLabeled", { count: selected.size, label: name }));
          setSelected(new Set());
        },
        onError: (error) => reportError(error),
      },
    );
  };

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Space wrap style={{ width: "100%", justifyContent: "space-between" }}>
        <Space wrap>
          <Typography.Text>{t("gallery.filter")}</Typography.Text>
          <Select
            aria-label={t("gallery.filter")}
            value={filter}
            onChange={changeFilter}
            style={{ minWidth: 200 }}
            options={[
              { value: ALL, label: t("gallery.all") },
              { value: UNLABELED, label: t("gallery.unlabeled") },
              ...dataset.class_labels.map((c) => ({ value: c.name, label: t("gallery.byLabel", { label: c.name }) })),
            ]}
          />
          {samples.data && <Typography.Text type="secondary">{t("gallery.total", { count: samples.data.count })}</Typography.Text>}
        </Space>
        {classification && (
          <Space wrap>
            <Checkbox checked={selecting} onChange={(e) => { setSelecting(e.target.checked); setSelected(new Set()); }}>
              {t("gallery.select")}
            </Checkbox>
            {selecting && (
              <>
                <Button size="small" onClick={() => setSelected(new Set(rows.map((s) => s.id)))}>
                  {t("gallery.selectPage")}
                </Button>
                <Button size="small" onClick={() => setSelected(new Set())} disabled={selected.size === 0}>
                  {t("gallery.clearSelection")}
                </Button>
                <Typography.Text>{t("gallery.selected", { count: selected.size })}</Typography.Text>
                <Dropdown
                  disabled={selected.size === 0 || dataset.class_labels.length === 0}
                  menu={{
                    items: dataset.class_labels.map((c) => ({ key: c.id, label: c.name })),
                    onClick: ({ key }) => bulkLabel(key),
                  }}
                >
                  <Button size="small" type="primary" loading={bulk.isPending}>
                    {t("gallery.labelSelected")}
                  </Button>
                </Dropdown>
              </>
            )}
          </Space>
        )}
      </Space>

      {samples.isError ? (
        <ErrorAlert error={samples.error} onRetry={() => void samples.refetch()} />
      ) : (
        <div style={{ display: "flex", gap: 16, alignItems: "flex-start" }}>
          <div style={{ flex: 1, minWidth: 0 }}>
            <Spin spinning={samples.isFetching && !samples.isPending}>
              {samples.isPending ? (
                <Spin />
              ) : rows.length === 0 ? (
                <Empty description={t("gallery.empty")} />
              ) : (
                <div
                  data-testid="gallery"
                  style={{ display: "grid", gridTemplateColumns: "repeat(auto-fill, minmax(104px, 1fr))", gap: 8 }}
                >
                  {rows.map((sample) => (
                    <Thumbnail
                      key={sample.id}
                      sample={sample}
                      current={sample.id === currentId}
                      checked={selecting ? selected.has(sample.id) : undefined}
                      onClick={() => (selecting ? toggle(sample.id) : setCurrentId(sample.id))}
                    />
                  ))}
                </div>
              )}
            </Spin>
            <Pagination
              style={{ marginTop: 16 }}
              current={page}
              pageSize={pageSize}
              total={samples.data?.count ?? 0}
              pageSizeOptions={PAGE_SIZES}
              showSizeChanger
              onChange={(p, size) => {
                setPage(size !== pageSize ? 1 : p);
                setPageSize(size);
              }}
            />
          </div>
          {classification && current && !selecting && (
            <LabelingPanel
              projectId={projectId}
              dataset={dataset}
              samples={rows}
              current={current}
              onNavigate={setCurrentId}
              onClose={() => setCurrentId(null)}
            />
          )}
        </div>
      )}
      {!classification && current && (
        <DetectionLabelingPanel
          projectId={projectId}
          dataset={dataset}
          samples={rows}
          current={current}
          onNavigate={setCurrentId}
          onClose={() => setCurrentId(null)}
        />
      )}
    </Space>
  );
}

function Thumbnail(props: { sample: Sample; current: boolean; checked: boolean | undefined; onClick: () => void }) {
  const { t } = useTranslation();
  const { sample } = props;
  const label = classLabelOf(sample);
  const boxes = boxCountOf(sample);
  return (
    <button
      type="button"
      data-testid="sample"
      title={sample.original_name}
      aria-label={`${sample.original_name}: ${label ?? t("gallery.unlabeledTag")}`}
      aria-pressed={props.checked ?? props.current}
      onClick={props.onClick}
      style={{
        position: "relative",
        padding: 4,
        background: "#fff",
        cursor: "pointer",
        border: `2px solid ${props.current || props.checked ? "#1677ff" : "#f0f0f0"}`,
        borderRadius: 6,
        textAlign: "center",
      }}
    >
      {props.checked !== undefined && (
        <Checkbox checked={props.checked} style={{ position: "absolute", top: 4, left: 6 }} tabIndex={-1} />
      )}
      <img
        src={sample.image_url}
        alt={sample.original_name}
        loading="lazy"
        decoding="async"
        width={92}
        height={92}
        style={{ objectFit: "contain", display: "block", margin: "0 auto", imageRendering: sample.width < 92 ? "pixelated" : "auto" }}
      />
      <div style={{ marginTop: 4, whiteSpace: "nowrap", overflow: "hidden", textOverflow: "ellipsis" }}>
        {label !== null ? (
          <Tag color="blue" style={{ marginInlineEnd: 0 }}>{label}</Tag>
        ) : boxes > 0 ? (
          <Tag style={{ marginInlineEnd: 0 }}>{boxes} ▭</Tag>
        ) : (
          <Tag style={{ marginInlineEnd: 0 }}>{t("gallery.unlabeledTag")}</Tag>
        )}
      </div>
    </button>
  );
}
