// The sample gallery: a virtualized thumbnail grid (SampleGrid) over the dataset's samples, loaded
// page after page as the grid scrolls; filters by label or unlabeled and by a dataset version's
// split, and the order (most uncertain first once a model pre-labeled the dataset), kept in the URL; a selection for bulk labeling; the labeling panel (classification) or
// drawer (detection); the undo history of classification labels (useLabelHistory), bulk ones too.
import { App, Button, Checkbox, Dropdown, Empty, Select, Space, Spin, Typography } from "antd";
import { useCallback, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { useSearchParams } from "react-router";

import { useSampleList, type Dataset, type Sample, type SampleFilter } from "../../api/queries/datasets";
import { useBulkLabel } from "../../api/queries/labeling";
import { useCanEdit } from "../../api/queries/projects";
import { SPLITS, useDatasetVersions, type Split } from "../../api/queries/versions";
import { ErrorAlert } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { classColour } from "./boxes";
import { DetectionLabelingPanel } from "./DetectionLabelingPanel";
import { filterFromParams, paramsWithFilter } from "./galleryFilter";
import { classLabelIdOf, nextUnlabeledId } from "./labeling";
import { UndoRedoButtons } from "./LabelingControls";
import { LabelingPanel, type LabelingPanelProps } from "./LabelingPanel";
import { SampleGrid } from "./SampleGrid";
import { effectiveOrder, type SampleOrder } from "./suggestions";
import { useLabelHistory } from "./useLabelHistory";

const UNLABELED = "\u0000unlabeled";
const NO_OBJECTS = "\u0000no-objects";
const ALL = "\u0000all";

export function SampleGallery({ projectId, dataset }: { projectId: string; dataset: Dataset }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const [params, setParams] = useSearchParams();
  const chosen = filterFromParams(params);
  // the order shown: the one chosen, else most uncertain first when a model left suggestions
  const filter = { ...chosen, order: effectiveOrder(chosen.order, dataset) };
  const filterKey = JSON.stringify(filter);
  const [currentId, setCurrentId] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [selecting, setSelecting] = useState(false);
  const bulk = useBulkLabel(projectId, dataset.id);
  const canEdit = useCanEdit(projectId);
  const versions = useDatasetVersions(projectId, dataset.id);

  const samples = useSampleList(projectId, dataset.id, filter);
  const rows = useMemo(() => samples.data?.pages.flatMap((page) => page.results) ?? [], [samples.data]);
  const count = samples.data?.pages[0]?.count;
  // a sample an undo brought back may not be in the loaded rows yet (a filter of unlabeled
  // samples drops it once labeled, and its refetch is on the way): the panel shows it meanwhile
  const [pinned, setPinned] = useState<Sample | null>(null);
  const current = rows.find((s) => s.id === currentId) ?? (pinned?.id === currentId ? pinned : null);
  const classification = dataset.task_type === "image_classification";
  const history = useLabelHistory(projectId, dataset.id, {
    enabled: classification && canEdit,
    // an undo shows the sample; a redo of a label moves on as labeling does
    onShow: (sample, labeled) => {
      setPinned(sample);
      setCurrentId(labeled ? (nextUnlabeledId(rows, sample.id) ?? sample.id) : sample.id);
    },
  });
  // boxes on the thumbnails in their class's colour, as in the drawer (colour by position)
  const colourOfClass = useMemo(() => {
    const colours = new Map(dataset.class_labels.map((c) => [c.id, classColour(c.position)]));
    return (classLabelId: string) => colours.get(classLabelId) ?? classColour(-1);
  }, [dataset.class_labels]);

  const changeFilter = (change: Partial<SampleFilter>) => {
    setParams((p) => paramsWithFilter(p, { ...filterFromParams(p), ...change }), { replace: true });
    setSelected(new Set());
  };
  const labelFilter = filter.unlabeled ? UNLABELED : filter.noObjects ? NO_OBJECTS : (filter.label ?? ALL);
  const changeLabelFilter = (value: string) =>
    changeFilter({
      unlabeled: value === UNLABELED,
      noObjects: value === NO_OBJECTS,
      label: value === UNLABELED || value === NO_OBJECTS || value === ALL ? undefined : value,
    });

  const { hasNextPage, isFetchingNextPage, fetchNextPage } = samples;
  const loadMore = useCallback(() => void fetchNextPage(), [fetchNextPage]);
  const onThumbnailClick = useCallback(
    (id: string) => {
      if (!selecting) {
        setCurrentId(id);
        return;
      }
      setSelected((prev) => {
        const next = new Set(prev);
        if (next.has(id)) next.delete(id);
        else next.add(id);
        return next;
      });
    },
    [selecting],
  );

  const bulkLabel = (classLabelId: string) => {
    const name = dataset.class_labels.find((c) => c.id === classLabelId)?.name ?? "";
    const loaded = new Map(rows.map((s) => [s.id, s]));
    const changes = [...selected].map((sampleId) => {
      const sample = loaded.get(sampleId);
      return { sampleId, before: sample ? classLabelIdOf(sample) : null, after: classLabelId };
    });
    bulk.mutate(
      { sampleIds: [...selected], classLabelId },
      {
        onSuccess: () => {
          history.record({ changes });
          void message.success(t("gallery.bulkLabeled", { count: selected.size, label: name }));
          setSelected(new Set());
        },
        onError: (error) => history.reportLabelError(error),
      },
    );
  };

  const panelProps = (sample: Sample): LabelingPanelProps => ({
    projectId,
    dataset,
    samples: rows,
    current: sample,
    onNavigate: setCurrentId,
    onClose: () => setCurrentId(null),
  });

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Space wrap style={{ width: "100%", justifyContent: "space-between" }}>
        <Space wrap>
          <Typography.Text>{t("gallery.filter")}</Typography.Text>
          <Select
            aria-label={t("gallery.filter")}
            value={labelFilter}
            onChange={changeLabelFilter}
            style={{ minWidth: 180 }}
            options={[
              { value: ALL, label: t("gallery.all") },
              { value: UNLABELED, label: t("gallery.unlabeled") },
              // a detection image checked "no objects" is labeled, and apart from the unlabeled
              ...(classification ? [] : [{ value: NO_OBJECTS, label: t("gallery.noObjects") }]),
              ...dataset.class_labels.map((c) => ({ value: c.name, label: t("gallery.byLabel", { label: c.name }) })),
            ]}
          />
          <Select
            aria-label={t("gallery.version")}
            value={filter.version ?? null}
            onChange={(version: string | null | undefined) =>
              changeFilter({ version: version ?? undefined, split: version ? (filter.split ?? "train") : undefined })
            }
            allowClear
            placeholder={t("gallery.anyVersion")}
            loading={versions.isPending}
            style={{ minWidth: 150 }}
            options={(versions.data ?? []).map((v) => ({ value: v.id, label: t("gallery.versionOption", { number: v.number }) }))}
          />
          <Select
            aria-label={t("gallery.split")}
            value={filter.split ?? null}
            onChange={(split: Split) => changeFilter({ split })}
            disabled={!filter.version}
            placeholder={t("gallery.split")}
            style={{ minWidth: 130 }}
            options={SPLITS.map((split) => ({ value: split, label: t(`versions.splits.${split}`) }))}
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
          {count !== undefined && <Typography.Text type="secondary">{t("gallery.total", { count })}</Typography.Text>}
        </Space>
        {classification && (
          <Space wrap>
            <EditorOnly canEdit={canEdit}>
              <Checkbox checked={selecting} disabled={!canEdit} onChange={(e) => { setSelecting(e.target.checked); setSelected(new Set()); }}>
                {t("gallery.select")}
              </Checkbox>
            </EditorOnly>
            {selecting && canEdit && (
              <>
                <Button size="small" onClick={() => setSelected(new Set(rows.map((s) => s.id)))} disabled={rows.length === 0}>
                  {t("gallery.selectLoaded", { count: rows.length })}
                </Button>
                <Button size="small" onClick={() => setSelected(new Set())} disabled={selected.size === 0}>
                  {t("gallery.clearSelection")}
                </Button>
                <Typography.Text>{t("gallery.selected", { count: selected.size })}</Typography.Text>
                <UndoRedoButtons onUndo={history.undo} onRedo={history.redo} canUndo={history.canUndo} canRedo={history.canRedo} disabled={history.busy} />
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
            {/* a new filter's first page is on its way: the previous rows show under a spinner */}
            <Spin spinning={samples.isPlaceholderData}>
              {samples.isPending ? (
                <Spin />
              ) : rows.length === 0 ? (
                <Empty description={t("gallery.empty")} />
              ) : (
                <SampleGrid
                  samples={rows}
                  currentId={currentId}
                  selected={selecting ? selected : undefined}
                  onClick={onThumbnailClick}
                  hasMore={hasNextPage}
                  loadingMore={isFetchingNextPage}
                  onLoadMore={loadMore}
                  resetKey={filterKey}
                  colourOfClass={colourOfClass}
                />
              )}
            </Spin>
          </div>
          {classification && current && !selecting && <LabelingPanel {...panelProps(current)} history={history} />}
        </div>
      )}
      {!classification && current && <DetectionLabelingPanel {...panelProps(current)} />}
    </Space>
  );
}
