package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/internal/recipeimport"
	sparkrecipe "github.com/sparkform/sparkform/modules/spark-recipe"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

func newRecipeCommand(m *meta) *cobra.Command {
	cmd := &cobra.Command{Use: "recipe", Short: "Work with launcher recipes (import)"}
	var out, repo, pinFrom, pinIdentity, pinKnownHosts string
	var pinSudo bool
	var sets []string
	imp := &cobra.Command{
		Use:   "import RECIPE.toml|RECIPE.yaml",
		Short: "Write a root module that runs a launcher recipe through the spark-recipe module",
		Long: `Read a launcher recipe, the seed's TOML (*.recipe.toml) or sparkrun's YAML
(*.yaml, *.yml; recipe formats v1 and v2), and write a root module to -o DIR
(default: the recipe's file name without its extension): main.sf.hcl
calling the spark-recipe module, variables.sf.hcl (the nodes, given with
-var or a var file: never taken from the recipe), and a copy of the module
under modules/spark-recipe. Every recipe key is mapped (docs/recipes.md);
an unknown key is an error naming it. Steps it cannot map become
node_command resources, with a warning and the step's line for each.

Mods (sparkrun's mods, a { script = PATH } step) are read from the
recipe's repository (-repo DIR; default: the folder above the recipe
holding .git, else the recipe's folder) and inlined; one that is not there
is an error naming it. An unpinned image (no tag, or :latest) is a warning
that drift cannot be seen; -pin-from NODE pins it to the digest the node
has ("local", or [USER@]HOST[:PORT] over SSH, host key checked against
-known-hosts). -set KEY=VALUE overrides a sparkrun recipe's defaults, as
sparkrun's -o KEY=VALUE does. A recipe that cannot run (Ray on one node,
a parallel size that does not divide the GPUs) is refused. Nothing is
written unless the import succeeds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			opts := recipeimport.Options{RepoDir: repo}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("-set %q: give KEY=VALUE (a key of the recipe's defaults)", kv)
				}
				if opts.Set == nil {
					opts.Set = map[string]string{}
				}
				opts.Set[k] = v
			}
			if pinFrom != "" {
				n, err := pinNode(pinFrom, pinIdentity, pinKnownHosts, pinSudo)
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
				defer cancel()
				conn, err := node.Open(ctx, n)
				if err != nil {
					fmt.Fprintln(m.stderr, "Error:", node.Explain(n, err))
					return &exitError{1}
				}
				defer conn.Close()
				opts.PinFrom = pinFrom
				opts.RepoDigests = func(image string) ([]string, error) { return repoDigests(ctx, conn, n.Become, image) }
			}
			res, err := recipeimport.ImportWith(src, args[0], opts)
			if err != nil {
				fmt.Fprintln(m.stderr, "Error:", err)
				return &exitError{1}
			}
			dir := out
			if dir == "" {
				base := filepath.Base(args[0])
				dir = strings.TrimSuffix(strings.TrimSuffix(base, filepath.Ext(base)), ".recipe")
			}
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return fmt.Errorf("%s is not empty: give -o a new or empty folder, so nothing there is overwritten", dir)
			}
			files := map[string][]byte{}
			for n, b := range res.Files {
				files[n] = b
			}
			mods, _ := fs.Glob(sparkrecipe.Files, "*.sf.hcl")
			for _, n := range mods {
				b, err := fs.ReadFile(sparkrecipe.Files, n)
				if err != nil {
					return err
				}
				files[filepath.Join("modules", "spark-recipe", n)] = b
			}
			for n, b := range files {
				p := filepath.Join(dir, n)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					return err
				}
			}
			for _, w := range res.Warnings {
				if w.Line > 0 {
					fmt.Fprintf(m.stderr, "Warning: %s:%d: %s\n", args[0], w.Line, w.Message)
				} else {
					fmt.Fprintf(m.stderr, "Warning: %s: %s\n", args[0], w.Message)
				}
			}
			fmt.Fprintf(m.stdout, "Wrote %s (main.sf.hcl, variables.sf.hcl, modules/spark-recipe).\nGive the nodes with -var or a var file, then: cd %s && sparkform plan\n", dir, dir)
			return nil
		},
	}
	imp.Flags().StringVarP(&out, "out", "o", "", "folder to write the root module to (new or empty)")
	imp.Flags().StringVar(&repo, "repo", "", "the recipe's repository, where its mods and step scripts are (default: the folder above the recipe holding .git, else the recipe's folder)")
	imp.Flags().StringVar(&pinFrom, "pin-from", "", "pin an unpinned image to the digest this node has: \"local\" or [USER@]HOST[:PORT] (SSH)")
	imp.Flags().StringVar(&pinIdentity, "identity-file", "", "with -pin-from: the SSH private key (default: the ssh-agent, ~/.ssh/id_ed25519, id_rsa)")
	imp.Flags().StringVar(&pinKnownHosts, "known-hosts", "", "with -pin-from: the known_hosts file the node's host key is checked against (default ~/.ssh/known_hosts)")
	imp.Flags().StringArrayVar(&sets, "set", nil, "KEY=VALUE: override a sparkrun recipe's defaults before its command is rendered, as sparkrun's -o KEY=VALUE (repeatable; tensor_parallel changes the node count)")
	imp.Flags().BoolVar(&pinSudo, "pin-sudo", false, "with -pin-from: ask Docker through sudo -n (when the user is not in the docker group)")
	cmd.AddCommand(imp)
	return cmd
}

// pinNode is the node -pin-from names: "local", or [USER@]HOST[:PORT].
func pinNode(spec, identity, knownHosts string, sudo bool) (sdk.Node, error) {
	if spec == "local" {
		return sdk.Node{Name: "local", Transport: "local", Become: sudo}, nil
	}
	n := sdk.Node{Name: spec, Transport: "ssh", Port: 22, IdentityFile: identity, KnownHosts: knownHosts, Become: sudo, Timeout: 30 * time.Second}
	hostport := spec
	if u, h, ok := strings.Cut(spec, "@"); ok {
		n.User, hostport = u, h
	}
	n.Host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		port, err := strconv.Atoi(p)
		if err != nil || port < 1 || port > 65535 {
			return n, fmt.Errorf("-pin-from %q: the port must be a number 1-65535", spec)
		}
		n.Host, n.Port = h, port
	}
	if n.Host == "" || strings.ContainsAny(n.Host, " /") {
		return n, fmt.Errorf("-pin-from %q: give \"local\" or [USER@]HOST[:PORT]", spec)
	}
	return n, nil
}

// repoDigests asks the node's Docker for the registry digests of image
// (one command; the image is one argv word, never shell text).
func repoDigests(ctx context.Context, conn node.Conn, become bool, image string) ([]string, error) {
	res, err := conn.Run(ctx, node.Cmd{Argv: []string{"docker", "image", "inspect", "--format", "{{json .RepoDigests}}", "--", image}, Become: become})
	if err != nil {
		var ee *node.ExitError
		if errors.As(err, &ee) && strings.Contains(strings.ToLower(ee.Stderr), "no such image") {
			return nil, fmt.Errorf("%w: %s", recipeimport.ErrNoImage, strings.TrimSpace(ee.Stderr))
		}
		return nil, err
	}
	var digests []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(res.Stdout))), &digests); err != nil {
		return nil, fmt.Errorf("docker image inspect printed %q: %v", res.Stdout, err)
	}
	return digests, nil
}
