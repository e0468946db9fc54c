module github.com/flotilla-dev/flotilla/controllers/probe

go 1.26.0
