package provision

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// templateData is what target.env values and target.command arguments may
// refer to: {{.Port}}, {{.Database.URL}}, {{.RunID}}, {{.Incarnation}},
// {{.EnvDir}}.
type templateData struct {
	Port        int
	RunID       string
	Incarnation int
	// EnvDir is the environment's own directory, removed at teardown: the
	// local provider's (the build sees it as $LONGHAUL_ENV_DIR), or, in a
	// docker target, ContainerEnvDir, where its environment volume is.
	EnvDir string
	// Database is nil when no database was provisioned, so {{.Database.URL}}
	// fails loudly instead of rendering an empty DSN.
	Database *templateDB
	// TLS is nil unless environment.tls is set (see makeSelfSigned).
	TLS *templateTLS
}

type templateDB struct {
	URL string // the database's URL in its own scheme (postgres://, mysql://, mariadb://, mongodb://)
	// DSN is the form the usual Go driver takes: the URL for PostgreSQL and
	// MongoDB, user:password@tcp(host:port)/name for MySQL and MariaDB.
	DSN      string
	Host     string
	Port     int
	Name     string
	User     string
	Password string
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// render expands one value. ${env:NAME} is turned into a template call before
// parsing, so a secret's value is inserted as data and never parsed itself.
func render(what, text string, data templateData, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(text, "{{") && !strings.Contains(text, "${env:") {
		return text, nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	src := envRef.ReplaceAllString(text, `{{env "$1"}}`)
	var unset string
	t, err := template.New(what).Option("missingkey=error").Funcs(template.FuncMap{
		"env": func(name string) (string, error) {
			v, ok := lookup(name)
			if !ok {
				unset = name
				return "", fmt.Errorf("${env:%s} is not set", name)
			}
			return v, nil
		},
	}).Parse(src)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrInvalidSpec, what, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		if unset != "" {
			return "", fmt.Errorf("%w: %s: ${env:%s} is not set in the worker's environment", ErrInvalidSpec, what, unset)
		}
		if data.Database == nil && strings.Contains(text, ".Database") {
			return "", fmt.Errorf("%w: %s uses {{.Database...}} but database.kind is none", ErrInvalidSpec, what)
		}
		if data.TLS == nil && strings.Contains(text, ".TLS") {
			return "", fmt.Errorf("%w: %s uses {{.TLS...}} but environment.tls is not set", ErrInvalidSpec, what)
		}
		return "", fmt.Errorf("%w: %s: %v", ErrInvalidSpec, what, oneLine(err))
	}
	return b.String(), nil
}

// renderEnv renders spec env overlaid with extra, and sets PORT to port
// unless either sets it. The result is sorted KEY=VALUE pairs.
func renderEnv(spec, extra map[string]string, port int, data templateData, lookup func(string) (string, bool)) ([]string, error) {
	merged := make(map[string]string, len(spec)+len(extra)+1)
	for k, v := range spec {
		merged[k] = v
	}
	for k, v := range extra {
		merged[k] = v
	}
	if _, ok := merged["PORT"]; !ok && port > 0 {
		merged["PORT"] = fmt.Sprint(port)
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		v, err := render("target.env."+k, merged[k], data, lookup)
		if err != nil {
			return nil, err
		}
		out = append(out, k+"="+v)
	}
	return out, nil
}

// renderArgs renders each argument of target.command.
func renderArgs(args []string, data templateData, lookup func(string) (string, bool)) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		v, err := render(fmt.Sprintf("target.command[%d]", i), a, data, lookup)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
