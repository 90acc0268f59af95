package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/internal/version"
)

// versionCmd prints which build is running (package version reads it).
func (a *app) versionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print longhaul's module version, the commit it was built from and the Go version",
		Example: `  longhaul version
  longhaul version --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := version.Current()
			switch format {
			case "text":
				_, err := a.stdout.Write([]byte(in.String() + "\n"))
				return err
			case "json":
				return json.NewEncoder(a.stdout).Encode(in)
			}
			return badInputf("--format %q: want text or json", format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text (one line) or json")
	return cmd
}
