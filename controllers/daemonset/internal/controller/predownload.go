package controller

import "context"

// preDownload is filled in with image pre-download (gate
// PreDownloadImageForDaemonSetUpdate).
func (c *Controller) preDownload(_ context.Context, _ *syncState) {}
