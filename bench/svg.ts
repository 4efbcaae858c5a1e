// Small SVG charts for the bench results, with no dependency: a line chart and a grouped bar chart, each
// with axes, ticks, a legend and optional horizontal reference lines (a limit, say).

export interface HLine {
  readonly y: number
  readonly label: string
}

export interface LineChartSpec {
  readonly title: string
  readonly xLabel: string
  readonly yLabel: string
  readonly series: readonly { readonly name: string; readonly points: readonly (readonly [number, number])[] }[]
  readonly hLines?: readonly HLine[]
}

export interface BarChartSpec {
  readonly title: string
  readonly yLabel: string
  readonly groups: readonly {
    readonly name: string
    readonly bars: readonly {
      readonly name: string
      readonly value: number
      readonly low?: number
      readonly high?: number
    }[]
  }[]
  readonly hLines?: readonly HLine[]
}

// Tableau 10: distinct on screen and in grey print.
const COLOURS = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
]
const colour = (i: number) => COLOURS[i % COLOURS.length] as string

const HEIGHT = 420
interface Plot {
  readonly left: number
  readonly right: number
  readonly top: number
  readonly bottom: number
}
const PLOT: Plot = { left: 70, right: 570, top: 44, bottom: HEIGHT - 56 }

function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] as string,
  )
}

/** Rounds for display: whole numbers (from 100 up) with separators, smaller ones to three significant digits. */
function formatNumber(n: number): string {
  if (Number.isInteger(n) || Math.abs(n) >= 100) return Math.round(n).toLocaleString('en')
  return Number(n.toPrecision(3)).toLocaleString('en', { maximumFractionDigits: 6 })
}

/** About five round ticks (1, 2 or 5 times a power of ten) covering [min, max]. */
function ticks(min: number, max: number): number[] {
  const span = max - min || Math.abs(max) || 1
  const raw = span / 5
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power
  const out: number[] = []
  let t = Math.floor(min / step) * step
  do {
    out.push(Number(t.toPrecision(12)))
    t += step
  } while ((out[out.length - 1] as number) < max)
  return out
}

function text(x: number, y: number, content: string, attrs = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${escapeXml(content)}</text>`
}

/** The plot, then a legend column as wide as its longest name (about 7 px a character at 12 px). */
function frame(title: string, names: readonly string[], body: string[], plot = PLOT): string {
  const width = plot.right + 50 + 7 * Math.max(0, ...names.map((n) => n.length))
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${HEIGHT}" viewBox="0 0 ${width} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${HEIGHT}" fill="#fff"/>`,
    text(plot.left + (plot.right - plot.left) / 2, 24, title, 'text-anchor="middle" font-size="15" font-weight="bold"'),
    ...body,
    '</svg>',
    '',
  ].join('\n')
}

/** The y axis, its grid and label, and the horizontal lines; returns the scale too. */
function yAxis(yTicks: number[], yLabel: string, hLines: readonly HLine[], plot = PLOT) {
  const lo = yTicks[0] as number
  const hi = yTicks[yTicks.length - 1] as number
  const y = (v: number) => plot.bottom - ((v - lo) / (hi - lo || 1)) * (plot.bottom - plot.top)
  const body = yTicks.flatMap((t) => [
    `<line x1="${plot.left}" x2="${plot.right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" stroke="#e6e6e6"/>`,
    text(plot.left - 6, y(t) + 4, formatNumber(t), 'text-anchor="end"'),
  ])
  body.push(
    text(
      16,
      (plot.top + plot.bottom) / 2,
      yLabel,
      `text-anchor="middle" transform="rotate(-90 16 ${(plot.top + plot.bottom) / 2})"`,
    ),
    `<line x1="${plot.left}" x2="${plot.left}" y1="${plot.top}" y2="${plot.bottom}" stroke="#333"/>`,
    `<line x1="${plot.left}" x2="${plot.right}" y1="${plot.bottom}" y2="${plot.bottom}" stroke="#333"/>`,
  )
  const lines = hLines.flatMap((h) => [
    `<line x1="${plot.left}" x2="${plot.right}" y1="${y(h.y).toFixed(1)}" y2="${y(h.y).toFixed(1)}" stroke="#333" stroke-dasharray="6 4"/>`,
    text(plot.right - 4, y(h.y) - 5, h.label, 'text-anchor="end" fill="#333"'),
  ])
  return { y, body, lines }
}

function legend(names: readonly string[], swatch: (i: number) => string, plot = PLOT): string[] {
  const x = plot.right + 20
  return names.flatMap((name, i) => {
    const top = plot.top + i * 20
    const filled = swatch(i)
      .replace(/\{x\}/g, String(x))
      .replace(/\{x2\}/g, String(x + 16))
      .replace(/\{y\}/g, String(top))
      .replace(/\{y6\}/g, String(top + 6))
    return [filled, text(x + 22, top + 10, name)]
  })
}

const yRange = (values: number[]) => ticks(Math.min(0, ...values), Math.max(...values, 1))

export function lineChart(spec: LineChartSpec): string {
  const points = spec.series.flatMap((s) => s.points)
  const xs = points.map(([x]) => x)
  const xTicks = ticks(Math.min(...xs, 0), Math.max(...xs, 1))
  const x0 = xTicks[0] as number
  const x1 = xTicks[xTicks.length - 1] as number
  const x = (v: number) => PLOT.left + ((v - x0) / (x1 - x0 || 1)) * (PLOT.right - PLOT.left)
  // Earlier series are drawn wider and later ones dashed, so that lines lying on each other stay visible.
  const width = (i: number) => 1.5 + 0.5 * Math.max(0, spec.series.length - 1 - i)
  const dash = (i: number) => (i >= 3 ? ` stroke-dasharray="${['8 3', '3 3', '10 3 2 3'][i % 3]}"` : '')
  const axis = yAxis(
    yRange([...points.map(([, v]) => v), ...(spec.hLines ?? []).map((h) => h.y)]),
    spec.yLabel,
    spec.hLines ?? [],
  )
  const body = [
    ...axis.body,
    ...xTicks.map((t) => text(x(t), PLOT.bottom + 16, formatNumber(t), 'text-anchor="middle"')),
    text((PLOT.left + PLOT.right) / 2, PLOT.bottom + 38, spec.xLabel, 'text-anchor="middle"'),
    ...axis.lines,
    ...spec.series.map((s, i) => {
      const path = s.points.map(([px, py]) => `${x(px).toFixed(1)},${axis.y(py).toFixed(1)}`).join(' ')
      return `<polyline points="${path}" fill="none" stroke="${colour(i)}" stroke-width="${width(i)}"${dash(i)}/>`
    }),
    ...legend(
      spec.series.map((s) => s.name),
      (i) =>
        `<line x1="{x}" x2="{x2}" y1="{y6}" y2="{y6}" stroke="${colour(i)}" stroke-width="${width(i)}"${dash(i)}/>`,
    ),
  ]
  return frame(
    spec.title,
    spec.series.map((s) => s.name),
    body,
  )
}

export function barChart(spec: BarChartSpec): string {
  const names = [...new Set(spec.groups.flatMap((g) => g.bars.map((b) => b.name)))]
  const values = spec.groups.flatMap((g) => g.bars.flatMap((b) => [b.value, b.low ?? b.value, b.high ?? b.value]))
  // Every bar as wide as in the fullest group, with room for its two-decimal label.
  const slots = Math.max(1, ...spec.groups.map((g) => g.bars.length))
  const barWidth = 24
  const groupWidth = (slots * barWidth) / 0.8
  const plot = { ...PLOT, right: PLOT.left + Math.max(500, spec.groups.length * groupWidth) }
  // Headroom over the tallest bar for its value label.
  const top = Math.max(...values, ...(spec.hLines ?? []).map((h) => h.y)) * 1.08
  const axis = yAxis(yRange([...values, top]), spec.yLabel, spec.hLines ?? [], plot)
  const body = [...axis.body]
  spec.groups.forEach((group, g) => {
    const left = plot.left + g * groupWidth
    // The group's name on two lines: its first word, then the rest.
    const [first = '', ...rest] = group.name.split(' ')
    body.push(text(left + groupWidth / 2, plot.bottom + 16, first, 'text-anchor="middle"'))
    body.push(text(left + groupWidth / 2, plot.bottom + 30, rest.join(' '), 'text-anchor="middle"'))
    const start = left + (groupWidth - group.bars.length * barWidth) / 2
    group.bars.forEach((bar, b) => {
      const bx = start + b * barWidth
      const top = axis.y(Math.max(bar.value, 0))
      const base = axis.y(Math.min(bar.value, 0))
      const fill = colour(names.indexOf(bar.name))
      const mid = bx + barWidth / 2
      body.push(
        `<rect x="${(bx + 1).toFixed(1)}" y="${top.toFixed(1)}" width="${barWidth - 2}" height="${(base - top).toFixed(1)}" fill="${fill}"/>`,
      )
      if (bar.low !== undefined && bar.high !== undefined) {
        const [yl, yh] = [axis.y(bar.low), axis.y(bar.high)]
        body.push(
          `<path d="M${mid.toFixed(1)} ${yl.toFixed(1)}V${yh.toFixed(1)}M${(mid - 4).toFixed(1)} ${yl.toFixed(1)}h8M${(mid - 4).toFixed(1)} ${yh.toFixed(1)}h8" stroke="#222" fill="none"/>`,
        )
      }
      const labelY = Math.min(top, bar.high === undefined ? top : axis.y(bar.high)) - 4
      body.push(text(mid, labelY, bar.value.toFixed(2), 'text-anchor="middle" font-size="9"'))
    })
  })
  body.push(
    ...axis.lines,
    ...legend(names, (i) => `<rect x="{x}" y="{y}" width="16" height="12" fill="${colour(i)}"/>`, plot),
  )
  return frame(spec.title, names, body, plot)
}
