// Package report holds the run's result model, the JSON contract every
// output is rendered from, and the renderers: Markdown, JSON and the
// terminal summary. Renderers are pure functions of a Report; they never
// read a clock or a cluster.
package report
