// The fleet: enrolled devices with their status and last metrics, one page at a time (refreshed
// every 5 s), filtered and paged by the server (status, tag, model version, part of the name; the
// filters and the page are in the URL, so going back from a device keeps them); "Add device",
// which issues an enrollment token and shows the enroll command once (and, under make run, offers
// to use this machine as a device: AddDeviceLocal.tsx), and "Roll out gradually…",
// which opens the rollouts page with the new-rollout form.
import { PlusOutlined, RocketOutlined, SearchOutlined } from "@ant-design/icons";
import { Alert, Button, Input, Modal, Select, Skeleton, Space, Table, Tag, Tooltip, Typography } from "antd";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";

import { useCanEdit } from "../../api/queries/projects";
import { useProjectModelVersions } from "../../api/queries/prelabel";
import {
  metricsOf,
  useCreateEnrollmentToken,
  useDevicePage,
  useFleetTags,
  type Device,
  type DevicePageQuery,
  type DeviceStatus,
} from "../../api/queries/fleet";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { LocalDeviceSection } from "./AddDeviceLocal";
import { DeviceStatusBadge } from "./DeploymentStateTag";
import { relativeTime } from "./telemetry";

const TOKEN_HOURS = 24;
export const DEVICE_PAGE_SIZES = [20, 50, 100] as const;
export const DEFAULT_DEVICE_PAGE_SIZE = 50;
/** how long the name search waits after the last key before it asks the server */
export const SEARCH_DEBOUNCE_MS = 300;

/** The table's filters and page, as the URL holds them. */
interface FleetView {
  page: number;
  pageSize: number;
  status?: DeviceStatus;
  tag?: string;
  modelVersion?: string;
  search?: string;
}

type FleetFilter = Pick<FleetView, "status" | "tag" | "modelVersion" | "search">;

function positiveInt(value: string | null): number | undefined {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

function viewFromParams(params: URLSearchParams): FleetView {
  const status = params.get("status");
  const size = positiveInt(params.get("page_size"));
  return {
    page: positiveInt(params.get("page")) ?? 1,
    pageSize: size && (DEVICE_PAGE_SIZES as readonly number[]).includes(size) ? size : DEFAULT_DEVICE_PAGE_SIZE,
    status: status === "online" || status === "offline" ? status : undefined,
    tag: params.get("tag") || undefined,
    modelVersion: params.get("model_version") || undefined,
    search: params.get("search") || undefined,
  };
}

function paramsWithView(params: URLSearchParams, view: FleetView): URLSearchParams {
  const next = new URLSearchParams(params);
  const values: Record<string, string | undefined> = {
    page: view.page > 1 ? String(view.page) : undefined,
    page_size: view.pageSize !== DEFAULT_DEVICE_PAGE_SIZE ? String(view.pageSize) : undefined,
    status: view.status,
    tag: view.tag,
    model_version: view.modelVersion,
    search: view.search,
  };
  for (const [key, value] of Object.entries(values)) {
    if (value) next.set(key, value);
    else next.delete(key);
  }
  return next;
}

function pageQuery(view: FleetView): DevicePageQuery {
  return {
    offset: (view.page - 1) * view.pageSize,
    limit: view.pageSize,
    status: view.status,
    tag: view.tag,
    modelVersion: view.modelVersion,
    search: view.search,
  };
}

export function LastSeen({ value }: { value: string | null }) {
  const { t } = useTranslation();
  if (!value) return <Typography.Text type="secondary">{t("devices.never")}</Typography.Text>;
  const { key, count } = relativeTime(value);
  return <Tooltip title={formatDate(value)}>{t(key, { count })}</Tooltip>;
}

function AddDeviceButton({ projectId }: { projectId: string }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const create = useCreateEnrollmentToken(projectId);
  const issued = create.data;
  const canEdit = useCanEdit(projectId);
  return (
    <>
      <EditorOnly canEdit={canEdit}>
        <Button
          type="primary"
          icon={<PlusOutlined />}
          loading={create.isPending}
          disabled={!canEdit}
          onClick={() => create.mutate({ expires_in_hours: TOKEN_HOURS }, { onError: (error) => reportError(error) })}
        >
          {t("devices.add")}
        </Button>
      </EditorOnly>
      <Modal
        open={Boolean(issued)}
        title={t("devices.addTitle")}
        onCancel={() => create.reset()}
        footer={<Button onClick={() => create.reset()}>{t("common.close")}</Button>}
        width={720}
      >
        {issued && (
          <Space orientation="vertical" style={{ width: "100%" }}>
            <LocalDeviceSection projectId={projectId} />
            <Typography.Paragraph>{t("devices.addIntro", { hours: TOKEN_HOURS })}</Typography.Paragraph>
            {issued.server_url_is_local && <Alert data-testid="local-url" type="info" showIcon title={t("devices.localUrl", { url: issued.server_url })} />}
            <Alert type="warning" showIcon title={t("devices.shownOnce")} />
            {(
              [
                ["install-command", "devices.stepInstall", issued.install_command],
                ["enroll-command", "devices.stepEnroll", issued.enroll_command],
                ["run-command", "devices.stepRun", issued.run_command],
              ] as const
            ).map(([testId, label, command]) => (
              <div key={testId}>
                <Typography.Text strong>{t(label)}</Typography.Text>
                <Typography.Paragraph data-testid={testId} copyable={{ text: command }} code style={{ whiteSpace: "pre-wrap", wordBreak: "break-all", marginBottom: 0 }}>
                  {command}
                </Typography.Paragraph>
              </div>
            ))}
            <Typography.Text type="secondary">
              {t("devices.tokenExpires")}: {formatDate(issued.expires_at)}
            </Typography.Text>
          </Space>
        )}
      </Modal>
    </>
  );
}

/** Opens the rollouts page with the new-rollout form: a version sent to a canary first, then the rest. */
function RollOutButton({ projectId }: { projectId: string }) {
  const { t } = useTranslation();
  const navigate = useNavigate();
  const canEdit = useCanEdit(projectId);
  return (
    <EditorOnly canEdit={canEdit}>
      <Button icon={<RocketOutlined />} disabled={!canEdit} onClick={() => void navigate(`/projects/${projectId}/rollouts?new=1`)}>
        {t("rollouts.rollOutGradually")}
      </Button>
    </EditorOnly>
  );
}

/** Filters above the table: status, tag, model version and part of the name (debounced). */
function FleetFilters({ projectId, view, pageDevices, onChange }: { projectId: string; view: FleetView; pageDevices: readonly Device[]; onChange: (change: FleetFilter) => void }) {
  const { t } = useTranslation();
  // the full list (every tag) is read only once the tag picker opens, and not polled
  const [tagsWanted, setTagsWanted] = useState(false);
  const fleetTags = useFleetTags(projectId, tagsWanted);
  const versions = useProjectModelVersions(projectId);
  const [searchText, setSearchText] = useState(view.search ?? "");
  const search = searchText.trim() || undefined;
  // the URL's search changed otherwise than by typing (back, a link): the box shows it
  const [urlSearch, setUrlSearch] = useState(view.search);
  if (view.search !== urlSearch) {
    setUrlSearch(view.search);
    if (view.search !== search) setSearchText(view.search ?? "");
  }

  // the search goes to the server once the typing pauses
  useEffect(() => {
    if (search === view.search) return;
    const timer = setTimeout(() => onChange({ search }), SEARCH_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [search, view.search, onChange]);

  const tagOptions = useMemo(() => {
    // until the full list came: the tags on this page and the one chosen
    const tags = new Set([...(fleetTags.data ?? []), ...pageDevices.flatMap((d) => d.tags), ...(view.tag ? [view.tag] : [])]);
    return [...tags].sort().map((tag) => ({ value: tag, label: tag }));
  }, [fleetTags.data, pageDevices, view.tag]);
  const versionOptions = useMemo(
    () =>
      [...(versions.data ?? [])]
        .sort((a, b) => b.created_at.localeCompare(a.created_at))
        .map((v) => ({ value: v.id, label: `${v.model_name} v${v.version}` })),
    [versions.data],
  );

  return (
    <Space wrap data-testid="device-filters">
      <Select<DeviceStatus | "all">
        aria-label={t("devices.status")}
        style={{ width: 140 }}
        value={view.status ?? "all"}
        onChange={(value) => onChange({ status: value === "all" ? undefined : value })}
        options={[
          { value: "all", label: t("devices.allStatuses") },
          { value: "online", label: t("devices.online") },
          { value: "offline", label: t("devices.offline") },
        ]}
      />
      <Select<string>
        aria-label={t("devices.tag")}
        style={{ width: 180 }}
        placeholder={t("devices.allTags")}
        allowClear
        showSearch
        value={view.tag}
        loading={fleetTags.isFetching}
        notFoundContent={fleetTags.isFetching ? t("common.loading") : undefined}
        onOpenChange={(open) => {
          if (!open) return;
          if (!tagsWanted) setTagsWanted(true);
          else if (fleetTags.isStale && !fleetTags.isFetching) void fleetTags.refetch();
        }}
        onChange={(value) => onChange({ tag: value ?? undefined })}
        options={tagOptions}
      />
      <Select<string>
        aria-label={t("devices.modelVersion")}
        style={{ width: 220 }}
        placeholder={t("devices.allModelVersions")}
        allowClear
        showSearch={{ optionFilterProp: "label" }}
        value={view.modelVersion}
        loading={versions.isLoading}
        onChange={(value) => onChange({ modelVersion: value ?? undefined })}
        options={versionOptions}
      />
      <Input
        aria-label={t("devices.search")}
        placeholder={t("devices.search")}
        prefix={<SearchOutlined />}
        allowClear
        style={{ width: 220 }}
        value={searchText}
        onChange={(e) => setSearchText(e.target.value)}
      />
    </Space>
  );
}

export function DevicesPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();
  const view = viewFromParams(params);
  const devices = useDevicePage(projectId, pageQuery(view));
  const total = devices.data?.total ?? 0;
  const filtered = Boolean(view.status || view.tag || view.modelVersion || view.search);

  const setView = (change: (current: FleetView) => FleetView) =>
    setParams((p) => paramsWithView(p, change(viewFromParams(p))), { replace: true });
  // a new filter starts again at page 1 (stable: the search box's effect depends on it)
  const changeFilter = useCallback(
    (change: FleetFilter) => setParams((p) => paramsWithView(p, { ...viewFromParams(p), ...change, page: 1 }), { replace: true }),
    [setParams],
  );

  // the page is past the end (devices removed, or an old URL): the last page instead
  const lastPage = Math.max(1, Math.ceil(total / view.pageSize));
  const pastEnd = Boolean(devices.data) && !devices.isPlaceholderData && view.page > lastPage;
  useEffect(() => {
    if (pastEnd) setParams((p) => paramsWithView(p, { ...viewFromParams(p), page: lastPage }), { replace: true });
  }, [pastEnd, lastPage, setParams]);

  if (devices.isError) return <ErrorAlert error={devices.error} onRetry={() => void devices.refetch()} />;
  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Typography.Title level={3} style={{ margin: 0 }}>
          {t("nav.devices")}
        </Typography.Title>
        <Space wrap>
          <RollOutButton projectId={projectId} />
          <AddDeviceButton projectId={projectId} />
        </Space>
      </Space>
      <FleetFilters projectId={projectId} view={view} pageDevices={devices.data?.devices ?? []} onChange={changeFilter} />
      {!devices.data ? (
        <Skeleton active />
      ) : (
        <Table<Device>
          data-testid="devices-table"
          rowKey="id"
          size="small"
          loading={devices.isPlaceholderData}
          pagination={{
            current: view.page,
            pageSize: view.pageSize,
            total,
            showSizeChanger: true,
            pageSizeOptions: DEVICE_PAGE_SIZES.map(String),
            showTotal: (count) => t("devices.total", { count }),
            onChange: (page, pageSize) => setView((current) => ({ ...current, page: pageSize !== current.pageSize ? 1 : page, pageSize })),
          }}
          dataSource={devices.data.devices}
          locale={{ emptyText: filtered ? t("devices.noMatch") : t("devices.empty") }}
          onRow={(device) => ({ onClick: () => void navigate(`/projects/${projectId}/devices/${device.id}`), style: { cursor: "pointer" } })}
          columns={[
            {
              title: t("common.name"),
              dataIndex: "name",
              render: (name: string, d) => <Link to={`/projects/${projectId}/devices/${d.id}`}>{name}</Link>,
            },
            { title: t("devices.status"), dataIndex: "status", render: (_, d) => <DeviceStatusBadge status={d.status} /> },
            {
              title: t("devices.tags"),
              key: "tags",
              render: (_, d) => (
                <Space size={[0, 4]} wrap>
                  {d.tags.map((tag) => (
                    <Tag key={tag}>{tag}</Tag>
                  ))}
                </Space>
              ),
            },
            { title: t("devices.lastSeen"), dataIndex: "last_seen_at", render: (value: string | null) => <LastSeen value={value} /> },
            {
              title: t("devices.modelVersion"),
              key: "model",
              render: (_, d) =>
                d.current_model_version ? (
                  <Link to={`/projects/${projectId}/models/versions/${d.current_model_version.id}`} onClick={(e) => e.stopPropagation()}>
                    {d.current_model_version.model_name} v{d.current_model_version.version}
                  </Link>
                ) : (
                  <Typography.Text type="secondary">{t("devices.none")}</Typography.Text>
                ),
            },
            { title: t("devices.requests"), key: "requests", render: (_, d) => metricsOf(d.last_metrics).requests ?? "—" },
            {
              title: t("devices.p95"),
              key: "p95",
              render: (_, d) => {
                const p95 = metricsOf(d.last_metrics).latency_ms?.p95;
                return typeof p95 === "number" ? t("models.latencyMs", { ms: p95.toFixed(1) }) : "—";
              },
            },
          ]}
        />
      )}
    </Space>
  );
}
