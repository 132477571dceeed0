package addrs

// Resource is a resource block: `resource "TYPE" "NAME"`, in the root
// module (Module "") or in a module instance (Module is its address, e.g.
// `module.dsv41["a"]`; a string so that Resource stays comparable).
type Resource struct {
	Type, Name string
	Module     string
}

func (r Resource) String() string {
	if r.Module != "" {
		return r.Module + "." + r.Type + "." + r.Name
	}
	return r.Type + "." + r.Name
}

// AppendKey appends r.String() to buf: a map keyed by block address is
// then read with m[string(r.AppendKey(buf[:0]))], which the compiler
// does without a string per lookup (buf on the caller's stack).
func (r Resource) AppendKey(buf []byte) []byte {
	if r.Module != "" {
		buf = append(append(buf, r.Module...), '.')
	}
	return append(append(append(buf, r.Type...), '.'), r.Name...)
}

// ScopeKey is the name r has in its type's object of the evaluation
// scope: NAME in the root module, MODULE.NAME in a module instance (the
// configuration refers to it as TYPE["MODULE.NAME"] once flattened).
func (r Resource) ScopeKey() string {
	if r.Module != "" {
		return r.Module + "." + r.Name
	}
	return r.Name
}

// Instance addresses one instance of r.
func (r Resource) Instance(k InstanceKey) ResourceInstance {
	if k == nil {
		k = NoKey
	}
	return ResourceInstance{Resource: r, Key: k}
}

// ResourceInstance is one expanded instance of a resource block.
type ResourceInstance struct {
	Resource Resource
	Key      InstanceKey
}

func (r ResourceInstance) String() string { return r.Resource.String() + keyString(r.Key) }

// NodeBlock is a node block: `node "NAME"`.
type NodeBlock struct {
	Name string
}

// String is node.NAME; a node of a module instance, whose flattened Name
// is MODULE.NAME, renders as MODULE.node.NAME.
func (n NodeBlock) String() string {
	if mod, name, ok := splitScoped(n.Name); ok {
		return mod + ".node." + name
	}
	return "node." + n.Name
}

// Instance addresses one instance of n.
func (n NodeBlock) Instance(k InstanceKey) NodeInstance {
	if k == nil {
		k = NoKey
	}
	return NodeInstance{Node: n, Key: k}
}

// NodeInstance is one expanded instance of a node block.
type NodeInstance struct {
	Node NodeBlock
	Key  InstanceKey
}

func (n NodeInstance) String() string { return n.Node.String() + keyString(n.Key) }

// InputVariable is `var.NAME`.
type InputVariable struct{ Name string }

func (v InputVariable) String() string { return "var." + v.Name }

// LocalValue is `local.NAME`.
type LocalValue struct{ Name string }

func (l LocalValue) String() string { return "local." + l.Name }

// EachKey is `each.key`.
type EachKey struct{}

func (EachKey) String() string { return "each.key" }

// EachValue is `each.value`.
type EachValue struct{}

func (EachValue) String() string { return "each.value" }

// CountIndex is `count.index`.
type CountIndex struct{}

func (CountIndex) String() string { return "count.index" }

// ModuleCall is `module.NAME` (a module block), as referenced before the
// configuration is flattened.
type ModuleCall struct{ Name string }

func (m ModuleCall) String() string { return "module." + m.Name }

// PathAttr is `path.module` or `path.cwd`.
type PathAttr struct{ Name string }

func (p PathAttr) String() string { return "path." + p.Name }

// Referenceable is anything an expression may refer to.
type Referenceable interface {
	referenceableSigil()
	String() string
}

func (InputVariable) referenceableSigil() {}
func (LocalValue) referenceableSigil()    {}
func (NodeBlock) referenceableSigil()     {}
func (Resource) referenceableSigil()      {}
func (EachKey) referenceableSigil()       {}
func (EachValue) referenceableSigil()     {}
func (CountIndex) referenceableSigil()    {}
func (PathAttr) referenceableSigil()      {}
func (ModuleCall) referenceableSigil()    {}

var (
	_ Referenceable = InputVariable{}
	_ Referenceable = LocalValue{}
	_ Referenceable = NodeBlock{}
	_ Referenceable = Resource{}
	_ Referenceable = EachKey{}
	_ Referenceable = EachValue{}
	_ Referenceable = CountIndex{}
	_ Referenceable = PathAttr{}
	_ Referenceable = ModuleCall{}
)
