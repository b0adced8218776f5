from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """Page-number pagination; ``?page_size=`` up to 500 for galleries."""

    page_size_query_param = "page_size"
    max_page_size = 500
