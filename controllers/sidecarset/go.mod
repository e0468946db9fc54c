module github.com/flotilla-dev/flotilla/controllers/sidecarset

go 1.26.0
