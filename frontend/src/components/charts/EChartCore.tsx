// ECharts with only the pieces the console uses (tree-shaken); loaded lazily by Chart.tsx so the
// ~400 kB of ECharts is a separate chunk fetched by the pages that draw charts.
import { BarChart, HeatmapChart, LineChart, ScatterChart } from "echarts/charts";
import {
  DatasetComponent,
  GridComponent,
  LegendComponent,
  MarkAreaComponent,
  MarkLineComponent,
  TitleComponent,
  TooltipComponent,
  VisualMapComponent,
} from "echarts/components";
import * as echarts from "echarts/core";
import { CanvasRenderer } from "echarts/renderers";
// the ES module build: the CommonJS one (lib/) arrives as {default} through Rolldown
import EChartsReactCore from "echarts-for-react/esm/core";

import type { ChartProps } from "./Chart";

// MarkArea/MarkLine: the training curves' phase bands and kept-epoch line, the compression
// Pareto chart's budget floor (ECharts drops them silently when they are not registered);
// Scatter: the Pareto chart
echarts.use([
  BarChart,
  LineChart,
  HeatmapChart,
  ScatterChart,
  DatasetComponent,
  GridComponent,
  LegendComponent,
  MarkAreaComponent,
  MarkLineComponent,
  TitleComponent,
  TooltipComponent,
  VisualMapComponent,
  CanvasRenderer,
]);

export default function EChartCore({ option, height, onClick, ariaLabel }: ChartProps) {
  return (
    <div role="img" aria-label={ariaLabel}>
      <EChartsReactCore
        echarts={echarts}
        option={option}
        notMerge
        lazyUpdate
        style={{ height, width: "100%" }}
        onEvents={onClick ? { click: onClick } : undefined}
      />
    </div>
  );
}
