# check.sh PATH: exit 0 when nothing is at PATH; else print what is there
# and exit 3. Used at plan time before a create.
if [ -L "$1" ]; then
	echo symlink
	exit 3
elif [ -d "$1" ]; then
	echo directory
	exit 3
elif [ -e "$1" ]; then
	echo file
	exit 3
fi
exit 0
