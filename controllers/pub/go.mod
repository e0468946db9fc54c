module github.com/flotilla-dev/flotilla/controllers/pub

go 1.26.0
