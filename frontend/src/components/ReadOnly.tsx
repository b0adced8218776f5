// What a viewer sees instead of a write control: the control disabled, with a tooltip saying why.
import { EyeOutlined } from "@ant-design/icons";
import { Tag, Tooltip } from "antd";
import type { ReactNode } from "react";
import { useTranslation } from "react-i18next";

/** Wraps a write control; for a viewer (`canEdit` false) adds the "viewers cannot change this"
 * tooltip. The caller disables the control itself. Editors and owners get the child unchanged. */
export function EditorOnly({ canEdit, children }: { canEdit: boolean; children: ReactNode }) {
  const { t } = useTranslation();
  if (canEdit) return <>{children}</>;
  return (
    <Tooltip title={t("role.needsEditor")}>
      <span style={{ display: "inline-block" }}>{children}</span>
    </Tooltip>
  );
}

/** A small "Read-only" tag with the why in its tooltip. */
export function ReadOnlyTag({ long = false }: { long?: boolean }) {
  const { t } = useTranslation();
  return (
    <Tooltip title={t("role.needsEditor")}>
      <Tag icon={<EyeOutlined />} color="default" data-testid="read-only-tag">
        {long ? t("role.readOnly") : t("role.readOnlyShort")}
      </Tag>
    </Tooltip>
  );
}
