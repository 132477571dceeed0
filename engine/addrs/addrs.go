package addrs

// Resource is a resource block: `resource "TYPE" "NAME"`.
type Resource struct {
	Type, Name string
}

func (r Resource) String() string { return r.Type + "." + r.Name }

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

func (n NodeBlock) String() string { return "node." + n.Name }

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

var (
	_ Referenceable = InputVariable{}
	_ Referenceable = LocalValue{}
	_ Referenceable = NodeBlock{}
	_ Referenceable = Resource{}
	_ Referenceable = EachKey{}
	_ Referenceable = EachValue{}
	_ Referenceable = CountIndex{}
	_ Referenceable = PathAttr{}
)
