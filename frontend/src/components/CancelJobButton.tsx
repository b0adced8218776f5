// "Cancel" of a running job (training, compression): a danger button behind a confirmation;
// for a viewer, the button disabled with the read-only tooltip.
import { StopOutlined } from "@ant-design/icons";
import { Button, Popconfirm } from "antd";
import { useTranslation } from "react-i18next";

import { useCanEdit } from "../api/queries/projects";
import { useReportError } from "./errors";
import { EditorOnly } from "./ReadOnly";

interface CancelMutation {
  mutate: (variables: undefined, options: { onError: (error: unknown) => void }) => void;
  isPending: boolean;
}

/** `label`: the button and the confirm action; `confirm`: the question asked first. */
export function CancelJobButton({ projectId, cancel, label, confirm }: {
  projectId: string;
  cancel: CancelMutation;
  label: string;
  confirm: string;
}) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const canEdit = useCanEdit(projectId);
  if (!canEdit) {
    return (
      <EditorOnly canEdit={false}>
        <Button danger icon={<StopOutlined />} disabled>
          {label}
        </Button>
      </EditorOnly>
    );
  }
  return (
    <Popconfirm
      title={confirm}
      okText={label}
      cancelText={t("training.keepRunning")}
      okButtonProps={{ danger: true }}
      onConfirm={() => cancel.mutate(undefined, { onError: (error) => reportError(error) })}
    >
      <Button danger icon={<StopOutlined />} loading={cancel.isPending}>
        {label}
      </Button>
    </Popconfirm>
  );
}
