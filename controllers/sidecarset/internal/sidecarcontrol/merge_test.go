package sidecarcontrol

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Extra env, mounts and devices are added only at names or paths not taken
// yet: by the container (a mount's path by a device too) or by an earlier
// extra item.
func TestMergeEnvMountsDevices(t *testing.T) {
	c := &corev1.Container{
		Env:           []corev1.EnvVar{{Name: "A", Value: "app"}},
		VolumeMounts:  []corev1.VolumeMount{{Name: "m", MountPath: "/m"}},
		VolumeDevices: []corev1.VolumeDevice{{Name: "d", DevicePath: "/d"}},
	}
	env := mergeEnv(append([]corev1.EnvVar(nil), c.Env...), []corev1.EnvVar{{Name: "A", Value: "x"}, {Name: "B", Value: "1"}, {Name: "B", Value: "2"}})
	if want := []corev1.EnvVar{{Name: "A", Value: "app"}, {Name: "B", Value: "1"}}; !reflect.DeepEqual(env, want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	mounts := mergeMounts(c, []corev1.VolumeMount{{Name: "x", MountPath: "/m"}, {Name: "y", MountPath: "/d"}, {Name: "z", MountPath: "/z"}, {Name: "z2", MountPath: "/z"}})
	if want := []corev1.VolumeMount{{Name: "m", MountPath: "/m"}, {Name: "z", MountPath: "/z"}}; !reflect.DeepEqual(mounts, want) {
		t.Errorf("mounts = %v, want %v", mounts, want)
	}
	devices := mergeDevices(c, []corev1.VolumeDevice{{Name: "x", DevicePath: "/m"}, {Name: "y", DevicePath: "/d"}, {Name: "z", DevicePath: "/z"}})
	if want := []corev1.VolumeDevice{{Name: "d", DevicePath: "/d"}, {Name: "z", DevicePath: "/z"}}; !reflect.DeepEqual(devices, want) {
		t.Errorf("devices = %v, want %v", devices, want)
	}
	if len(c.VolumeMounts) != 1 || len(c.VolumeDevices) != 1 {
		t.Errorf("container modified: %v %v", c.VolumeMounts, c.VolumeDevices)
	}
}
