// Command gpuplugin is the rig's stand-in for an accelerator's device
// plugin, run as a DaemonSet pod on a real node: it advertises a few
// devices of a resource (nvidia.com/gpu) to the kubelet through the
// device-plugin API, and gives a container that is allocated one exactly
// that device's node, so that the kubelet really mediates access. The
// device nodes are the rig's own (a major no driver of this kernel
// answers), so a container can see them but do nothing with them. With
// -replicas N it advertises each device N times, as a device plugin that
// time-slices does: replica IDs <id>::<n>, and every replica of a device
// gives its container that same device node.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func main() {
	resource := flag.String("resource", "nvidia.com/gpu", "the extended resource the devices are")
	devices := flag.String("devices", "", "folder of the device nodes to advertise, one device each (nvidia0, nvidia1...)")
	prefix := flag.String("container-path", "/dev", "where a container finds its device node")
	replicas := flag.Int("replicas", 1, "how many shares of each device to advertise (time-slicing); above 1, IDs are <device>::<n>")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *resource, *devices, *prefix, *replicas); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// plugin answers the kubelet for one resource.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	// nodes are the device nodes by device ID (a replica's are its
	// device's).
	nodes  map[string]string
	ids    []string
	prefix string
}

func run(ctx context.Context, resource, dir, prefix string, replicas int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	p := &plugin{nodes: map[string]string{}, prefix: prefix}
	for _, e := range entries {
		if e.Type()&os.ModeCharDevice == 0 {
			continue
		}
		id := "rig-" + e.Name()
		if replicas <= 1 {
			p.nodes[id] = filepath.Join(dir, e.Name())
			p.ids = append(p.ids, id)
			continue
		}
		for n := range replicas {
			rid := fmt.Sprintf("%s::%d", id, n)
			p.nodes[rid] = filepath.Join(dir, e.Name())
			p.ids = append(p.ids, rid)
		}
	}
	if len(p.ids) == 0 {
		return fmt.Errorf("no device nodes in %s", dir)
	}
	endpoint := "rig-" + strings.NewReplacer("/", "-", ".", "-").Replace(resource) + ".sock"
	sock := filepath.Join(pluginapi.DevicePluginPath, endpoint)
	// The kubelet empties its folder when it starts: serve and register
	// again whenever the socket is gone.
	for ctx.Err() == nil {
		if err := p.serve(ctx, sock, endpoint, resource); err != nil {
			log.Printf("serve: %v; again in a second", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return ctx.Err()
}

// serve runs one server on sock and registers it, until the socket is
// removed or ctx ends.
func (p *plugin) serve(ctx context.Context, sock, endpoint, resource string) error {
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	conn, err := grpc.NewClient("unix://"+pluginapi.KubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := pluginapi.NewRegistrationClient(conn).Register(rctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resource,
	}); err != nil {
		return fmt.Errorf("register with the kubelet: %w", err)
	}
	log.Printf("registered %d %s with the kubelet", len(p.ids), resource)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		if _, err := os.Stat(sock); err != nil {
			return fmt.Errorf("socket gone (the kubelet restarted): %w", err)
		}
	}
}

// GetDevicePluginOptions implements pluginapi.DevicePluginServer.
func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once, all healthy, and holds the stream.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	resp := &pluginapi.ListAndWatchResponse{}
	for _, id := range p.ids {
		resp.Devices = append(resp.Devices, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
	}
	if err := s.Send(resp); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// Allocate gives each container the device nodes of its devices, and no
// other, once each however many of a device's replicas it holds; and names
// its device IDs in NVIDIA_VISIBLE_DEVICES, as NVIDIA's plugin tells
// NVIDIA's container runtime (which the rig has not: nothing reads it but
// the container).
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		car := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{}}
		given := map[string]bool{}
		for _, id := range cr.DevicesIds {
			node, ok := p.nodes[id]
			if !ok {
				return nil, fmt.Errorf("unknown device %q", id)
			}
			if given[node] {
				continue
			}
			given[node] = true
			car.Devices = append(car.Devices, &pluginapi.DeviceSpec{
				HostPath: node, ContainerPath: filepath.Join(p.prefix, filepath.Base(node)), Permissions: "rw",
			})
		}
		car.Envs["RIG_ALLOCATED_DEVICES"] = strings.Join(cr.DevicesIds, ",")
		car.Envs["NVIDIA_VISIBLE_DEVICES"] = strings.Join(cr.DevicesIds, ",")
		resp.ContainerResponses = append(resp.ContainerResponses, car)
	}
	return resp, nil
}

// PreStartContainer implements pluginapi.DevicePluginServer; nothing to do.
func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// GetPreferredAllocation implements pluginapi.DevicePluginServer: no
// preference.
func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}
