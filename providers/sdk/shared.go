package sdk

import (
	"context"
	"strings"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// serviceName is the provider protocol's gRPC service, as generated from
// proto/provider.proto.
var serviceName = proto.Provider_ServiceDesc.ServiceName

// SharedService is the gRPC service under which a process serving several
// providers (ServeShared) serves the one named name: the protocol's
// service, its methods and messages unchanged, under a name of its own.
func SharedService(name string) string { return serviceName + "." + name }

// ServeShared serves several providers from one plugin process, each as
// the go-plugin plugin of its name and under SharedService(name): the
// engine dispenses each by name (GRPCProviderPlugin.Name) over the one
// connection. sparkform serves its built-in providers this way, one
// process start for all of them instead of one each. Like Serve, it
// returns when the engine closes the connection.
func ServeShared(ps map[string]Provider) {
	set := plugin.PluginSet{}
	for name, p := range ps {
		set[name] = &GRPCProviderPlugin{Impl: p, Name: name}
	}
	stopAll := func(ctx context.Context) error {
		var wg sync.WaitGroup
		for _, p := range ps {
			wg.Go(func() { _ = p.Stop(ctx) })
		}
		wg.Wait()
		return nil
	}
	ignoreSIGPIPE()
	go exitWithParent(stopAll, engineParent())
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         set,
		GRPCServer:      NewGRPCServerWithLimits,
	})
}

// sharedConn calls the methods of one provider of a shared process: the
// protocol's method paths, under that provider's service.
type sharedConn struct {
	cc     grpc.ClientConnInterface
	prefix string // "/" + SharedService(name) + "/"
}

func (c sharedConn) method(m string) string {
	if rest, ok := strings.CutPrefix(m, "/"+serviceName+"/"); ok {
		return c.prefix + rest
	}
	return m
}

func (c sharedConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.cc.Invoke(ctx, c.method(method), args, reply, opts...)
}

func (c sharedConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.cc.NewStream(ctx, desc, c.method(method), opts...)
}
