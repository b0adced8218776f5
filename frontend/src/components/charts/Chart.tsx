// The one chart component: an ECharts option in, a canvas out. ECharts loads on first use.
import { Skeleton } from "antd";
import { lazy, Suspense } from "react";

const EChartCore = lazy(() => import("./EChartCore"));

/** What ECharts passes to a click handler (the fields the console reads). */
export interface ChartClick {
  componentType?: string;
  seriesType?: string;
  seriesIndex?: number;
  dataIndex?: number;
  value?: unknown;
  data?: unknown;
}

export interface ChartProps {
  /** an ECharts option object (https://echarts.apache.org/en/option.html) */
  option: Record<string, unknown>;
  height: number;
  ariaLabel: string;
  onClick?: (params: ChartClick) => void;
}

export function Chart(props: ChartProps) {
  return (
    <Suspense fallback={<Skeleton.Node active style={{ width: "100%", height: props.height }} />}>
      <EChartCore {...props} />
    </Suspense>
  );
}
