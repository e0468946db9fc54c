package nodeclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// EventSink writes core/v1 Events, each in its own namespace (a cluster-scoped object's in the namespace the
// recorder gives it): the record.EventSink of client-go's EventSinkImpl, for
// record.EventBroadcaster.StartRecordingToSink.
type EventSink struct{ client rest.Interface }

var _ record.EventSink = EventSink{}

// EventSink returns the event sink.
func (c *Clients) EventSink() EventSink { return EventSink{c.Core} }

// Create creates event.
func (s EventSink) Create(event *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	if err := s.client.Post().NamespaceIfScoped(event.Namespace, event.Namespace != "").Resource("events").
		Body(event).Do(context.Background()).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Update replaces event (the broadcaster's count and last timestamp of a repeated event).
func (s EventSink) Update(event *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	if err := s.client.Put().NamespaceIfScoped(event.Namespace, event.Namespace != "").Resource("events").Name(event.Name).
		Body(event).Do(context.Background()).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Patch applies data, a strategic merge patch, to the event named as event.
func (s EventSink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	if err := s.client.Patch(types.StrategicMergePatchType).NamespaceIfScoped(event.Namespace, event.Namespace != "").
		Resource("events").Name(event.Name).Body(data).Do(context.Background()).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}
