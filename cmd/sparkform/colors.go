package main

import "github.com/fatih/color"

// The styles of the human UI. fatih/color decides by itself whether
// stdout is a terminal; sparkform decides that per stream (meta.color,
// -no-color, NO_COLOR), so each style is forced on and used only when the
// renderer's color is true.
var (
	green      = forced(color.FgGreen)
	yellow     = forced(color.FgYellow)
	red        = forced(color.FgRed)
	bold       = forced(color.Bold)
	faint      = forced(color.Faint)
	boldGreen  = forced(color.Bold, color.FgGreen)
	boldYellow = forced(color.Bold, color.FgYellow)
	boldRed    = forced(color.Bold, color.FgRed)
)

func forced(attrs ...color.Attribute) *color.Color {
	c := color.New(attrs...)
	c.EnableColor()
	return c
}
