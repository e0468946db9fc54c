package pub

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UpdatePriorityStrategy decides which pods are updated first. Exactly one
// of the two term lists may be used.
// +kubebuilder:validation:XValidation:rule="!(has(self.orderPriority) && size(self.orderPriority) > 0 && has(self.weightPriority) && size(self.weightPriority) > 0)",message="priorityStrategy: only one of orderPriority and weightPriority may be set"
type UpdatePriorityStrategy struct {
	// OrderPriority sorts pods by the integer value of the given label keys
	// (higher first); earlier terms win.
	// +optional
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty"`
	// WeightPriority sums the weights of matching selectors (higher first).
	// +optional
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

// UpdatePriorityOrderTerm orders pods by the value of a label.
type UpdatePriorityOrderTerm struct {
	// +kubebuilder:validation:MinLength=1
	OrderedKey string `json:"orderedKey"`
}

// UpdatePriorityWeightTerm adds Weight to pods matching MatchSelector.
type UpdatePriorityWeightTerm struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`
	// MatchSelector selects the pods that get Weight; it may not be empty.
	// (The rule is the cheapest form that fits the API server's cost budget for
	// an unbounded list of terms.)
	// +kubebuilder:validation:XValidation:rule="has(self.matchLabels) || has(self.matchExpressions)",message="weightPriority[].matchSelector must set matchLabels or matchExpressions"
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}

// UpdateScatterStrategy spreads updates of pods carrying the given
// label key/value pairs as evenly as possible across the rollout.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm is one label key/value pair to scatter.
type UpdateScatterTerm struct {
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value"`
}
