package docker

import (
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// MaxBinds is the most binds (mount blocks + bind_files) a container may
// have: the kernel's default fs.mount-max is 100,000 mounts per namespace.
const MaxBinds = 100000

// Labels sparkform puts on what it creates.
const (
	labelAddress = "sparkform.address"
	labelManaged = "sparkform.managed"
)

var bindFileType = cty.Object(map[string]cty.Type{"source": cty.String, "target": cty.String})

// inPlace are the attributes ContainerUpdate changes without a replace.
var inPlace = map[string]bool{"memory": true, "memory_swap": true, "cpus": true, "restart": true}

// notObservable are kept from config/prior: they steer sparkform, not the engine.
var notObservable = map[string]bool{"wait": true, "must_run": true}

func containerSchema() *sdk.ResourceSchema {
	fn := func(t cty.Type, desc string) *sdk.Attribute {
		return &sdk.Attribute{Type: t, Optional: true, ForceNew: true, Description: desc}
	}
	upd := func(t cty.Type, desc string) *sdk.Attribute {
		return &sdk.Attribute{Type: t, Optional: true, Description: desc}
	}
	comp := func(t cty.Type, desc string) *sdk.Attribute {
		return &sdk.Attribute{Type: t, Computed: true, Description: desc}
	}
	return &sdk.ResourceSchema{
		// Its output is `sparkform logs` (Logs in status.go).
		Logs: true,
		// What an instance manages on its node: two instances with the same
		// value on one node are refused at plan.
		Identity: []string{"name"},
		Description: "A Docker container on the node, created and started through the Engine API. " +
			"memory, memory_swap, cpus and restart change in place; any other change replaces the container.",
		Block: &sdk.Block{
			Attributes: map[string]*sdk.Attribute{
				"name":          {Type: cty.String, Required: true, ForceNew: true, Description: "Container name (unique on the node). A same-named container sparkform did not create is refused: import it instead."},
				"image":         {Type: cty.String, Required: true, ForceNew: true, Description: "Image reference, e.g. \"ghcr.io/org/img:tag\". Pulled (with progress) when missing on the node."},
				"entrypoint":    fn(cty.List(cty.String), "Entrypoint argv; unset keeps the image's."),
				"command":       fn(cty.List(cty.String), "Command (arguments to the entrypoint); unset keeps the image's."),
				"env":           fn(cty.Map(cty.String), "Environment variables. Variables the image sets and you do not are not drift."),
				"working_dir":   fn(cty.String, "Working directory inside the container."),
				"user":          fn(cty.String, "User (name, uid or uid:gid) the process runs as."),
				"memory":        upd(cty.String, "Memory limit: bytes or \"9g\", \"512m\" (compared by value). Changes in place."),
				"memory_swap":   upd(cty.String, "Memory + swap limit. Equal to memory means no swap; \"-1\" unlimited swap. Changes in place."),
				"cpus":          upd(cty.Number, "CPU limit in CPUs, applied as a CFS quota over a 100ms period (cpu.max \"600000 100000\" for 6). Changes in place."),
				"shm_size":      fn(cty.String, "Size of /dev/shm, e.g. \"2g\"."),
				"pids_limit":    fn(cty.Number, "Most processes in the container."),
				"devices":       fn(cty.List(cty.String), "Host devices: \"/dev/dri/card0\" or \"host:container[:perms]\" (perms from rwm; default rwm)."),
				"gpus":          fn(cty.String, "GPUs through a device request (docker run --gpus): \"all\" or a count. Needs a GPU device driver in the node's Docker Engine (the NVIDIA Container Toolkit); without one the container cannot start and apply says so."),
				"network_mode":  fn(cty.String, "Network mode: \"bridge\", \"host\", \"none\", \"container:NAME\" or a network name."),
				"ipc_mode":      fn(cty.String, "IPC mode: \"private\", \"shareable\", \"host\", \"container:NAME\"."),
				"ulimits":       fn(cty.Map(cty.String), "Ulimits by name: \"soft[:hard]\", e.g. { memlock = \"-1\", nofile = \"65536:65536\" }."),
				"cap_add":       fn(cty.Set(cty.String), "Capabilities to add (\"SYS_NICE\" or \"CAP_SYS_NICE\")."),
				"privileged":    fn(cty.Bool, "Run privileged (docker run --privileged): every capability and every host device. Some serving images ask for it; prefer gpus, devices and cap_add."),
				"labels":        fn(cty.Map(cty.String), "Labels. sparkform adds sparkform.address and sparkform.managed itself."),
				"cgroup_parent": fn(cty.String, "Parent cgroup, relative to the cgroup root (cgroupfs driver, e.g. \"/sparkform/serve\"; the path a kmod_cgroup manages) or a slice (systemd driver, \"sparkform.slice\")."),
				"restart":       upd(cty.String, "Restart policy: \"no\", \"always\", \"unless-stopped\", \"on-failure[:N]\". Changes in place."),
				"bind_files": fn(cty.List(bindFileType), "Files bound read-only one by one ({source, target}); every source must be a regular file (not a symlink) on the node. "+
					"Typically hubstage_manifest.NAME.files."),
				"stop_timeout": fn(cty.Number, "Seconds to wait for the process to stop before it is killed (docker stop -t)."),
				"must_run":     upd(cty.Bool, "Whether the container must be running (default true): a stopped container is then drift that apply starts again."),

				"id":                     comp(cty.String, "Container ID."),
				"image_id":               comp(cty.String, "ID of the image the container was created from."),
				"running":                comp(cty.Bool, "Whether the container is running now."),
				"exit_code":              comp(cty.Number, "Exit code of the last run (0 while running)."),
				"cgroup_version":         comp(cty.Number, "cgroup version of the node (1 or 2); null when the container is not running."),
				"cgroup_memory_max":      comp(cty.String, "memory.max the kernel applied, in bytes or \"max\" (v1: memory.limit_in_bytes)."),
				"cgroup_memory_swap_max": comp(cty.String, "memory.swap.max the kernel applied, in bytes or \"max\" (v1: memsw minus memory limit)."),
				"cgroup_cpu_max":         comp(cty.String, "cpu.max the kernel applied, \"QUOTA PERIOD\" or \"max PERIOD\" (v1: cfs_quota_us cfs_period_us)."),
			},
			BlockTypes: map[string]*sdk.NestedBlock{
				"mount": {
					Nesting:     sdk.NestingSet,
					ForceNew:    true,
					Description: "A host directory or file bound into the container.",
					Block: sdk.Block{Attributes: map[string]*sdk.Attribute{
						"source":           {Type: cty.String, Required: true, Description: "Absolute path on the node."},
						"target":           {Type: cty.String, Required: true, Description: "Absolute path in the container, without . or .. steps."},
						"read_only":        {Type: cty.Bool, Optional: true, Description: "Bind read-only (default false)."},
						"create_host_path": {Type: cty.Bool, Optional: true, Description: "Create source as a directory when missing (default false: a missing source is an error when the container is created)."},
					}},
				},
				"wait": {
					Nesting:     sdk.NestingSingle,
					MaxItems:    1,
					Description: "What apply waits for after starting the container. Exactly one of http, tcp or log_line.",
					Block: sdk.Block{Attributes: map[string]*sdk.Attribute{
						"http":     {Type: cty.String, Optional: true, Description: "URL reached from the node that must answer 2xx/3xx, e.g. \"http://127.0.0.1:8000/health\"."},
						"tcp":      {Type: cty.String, Optional: true, Description: "host:port reached from the node that must accept a connection."},
						"log_line": {Type: cty.String, Optional: true, Description: "Regular expression a line of the container's output must match."},
						"timeout":  {Type: cty.String, Optional: true, Description: "How long to wait (Go duration, default \"2m\")."},
					}},
				},
			},
		},
	}
}
