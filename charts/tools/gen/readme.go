package gen

// readmeText is charts/flotilla/README.md; <!-- VALUES --> becomes the table of values.yaml's documented values.
const readmeText = "README PLACEHOLDER\n\n<!-- VALUES -->\n"
