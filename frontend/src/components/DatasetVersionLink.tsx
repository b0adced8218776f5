// Lineage: a dataset version as people name it ("digits v3"), linked to its page.
import { useTranslation } from "react-i18next";
import { Link } from "react-router";

import type { components } from "../api/schema";

export function DatasetVersionLink({ projectId, version }: { projectId: string; version: components["schemas"]["DatasetVersionRef"] | null | undefined }) {
  const { t } = useTranslation();
  if (!version) return <>—</>;
  return (
    <Link to={`/projects/${projectId}/datasets/${version.dataset_id}/versions/${version.id}`}>
      {t("versions.title", { name: version.dataset_name, number: version.number })}
    </Link>
  );
}
